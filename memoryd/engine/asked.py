"""Questions about the user: which attribute a question asks about, and the
owner's current memories of it, whatever words either used.

"Where do I work?" shares no word and little meaning with "User just started at
Netflix, left Google"; the relevance floor drops it. But the statement was filed under
``employer`` when it was captured (``core.extraction.attributes``), and the question
asks about ``employer``: a softmax regression over the question's MiniLM vector (the
one retrieval already computed, so it costs a matrix product) names the attribute, and
the memories of that attribute are read by the index capture keeps (``memories.
attribute``) and injected ahead of the search's hits, past the floor, with the reason.
"What do you know about me?" is its own class, ``overview``: the owner's facts of
every attribute, grouped in the schema's order under the memory budget.

Weights (~40 KB) ship beside this file, trained by ``python -m bench.train_questions``
on questions written by a helper who never read this code. Without them, or without
MiniLM, questions are answered by search alone (``status`` says why).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memoryd.core.extraction.attributes import ATTRIBUTES, by_name
from memoryd.core.relevance import Dropped
from memoryd.embedding import TRANSFORMERS_MODEL
from memoryd.engine.attribute_model import minilm_present, own_minilm
from memoryd.models import Hit, Memory, Resolution

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from memoryd.storage.base import Filter, Reader

log = logging.getLogger("memoryd.retrieval")

MODEL_PATH = Path(__file__).with_name("question_model.npz")
NONE = "none"
OVERVIEW = "overview"
#: The likeliest attribute is asked about from this probability; the runner-up from
#: ``ALSO_AT`` ("what do I do for a living": the employer and the job title both
#: answer it); an overview from ``OVERVIEW_AT``. Chosen on the dev personas
#: (``bench/results/questions.json``), never on the held-out ones.
ASK_AT = 0.2
ALSO_AT = 0.1
OVERVIEW_AT = 0.35
#: A question embedded by the fast query encoder is embedded again by the model when
#: "none" is less likely than this on the encoder's vector: it may be about the user
#: (96-98 % of the self-questions of the dev and test personas; about a third of other
#: questions). Chosen on those personas.
MAY_ASK_BELOW = 0.8
#: The relevance floor's share kept when nothing of an asked attribute is stored.
LENIENT = 0.5
#: Rows read for asked attributes, and for an overview.
ASKED_ROWS = 16
OVERVIEW_ROWS = 80
_ORDER = {a.name: i for i, a in enumerate(ATTRIBUTES)}
#: The embedding source and model whose query vectors the weights read.
MINILM = ("transformers", TRANSFORMERS_MODEL)


@dataclass(frozen=True, slots=True)
class Asked:
    """What one question asks about the user: attributes, or everything (overview)."""

    attributes: tuple[str, ...] = ()
    overview: bool = False
    probability: float = 0.0
    #: the attribute is the likeliest class, "none" included (not merely above ASK_AT)
    sure: bool = False

    def __bool__(self) -> bool:
        return bool(self.attributes) or self.overview

    def describe(self) -> list[str]:
        return [OVERVIEW] if self.overview else list(self.attributes)


class QuestionModel:
    """Lazily loaded weights over MiniLM sentence vectors; ``asked`` maps a question's
    vector to what it asks about (an empty ``Asked`` when it asks nothing of the user
    or the model is absent)."""

    def __init__(self, path: Path = MODEL_PATH) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._loaded = False
        self._weights: np.ndarray | None = None
        self._bias: np.ndarray | None = None
        self._labels: list[str] = []
        self.status = "not loaded"

    def _load(self) -> bool:
        if self._loaded:
            return self._weights is not None
        with self._lock:
            if not self._loaded:
                try:
                    with np.load(self._path) as data:
                        self._weights = data["weights"].astype(np.float32)
                        self._bias = data["bias"].astype(np.float32)
                        self._labels = [str(x) for x in data["labels"]]
                    self.status = f"ready ({len(self._labels)} classes)"
                except (OSError, KeyError, ValueError) as exc:
                    self.status = f"no question model ({exc}): search alone"
                    log.warning("question classifier unavailable: %s", self.status)
                self._loaded = True
        return self._weights is not None

    def ready(self) -> bool:
        return self._load()

    def probabilities(self, vector: np.ndarray) -> list[tuple[str, float]]:
        """Every class with its probability, best first (empty without the model)."""
        if not self._load():
            return []
        assert self._weights is not None
        assert self._bias is not None
        logits = np.asarray(vector, dtype=np.float32).reshape(-1) @ self._weights + self._bias
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        order = np.argsort(-probs)
        return [(self._labels[i], float(probs[i])) for i in order]

    def asked(self, vector: np.ndarray) -> Asked:
        """The attribute most likely asked about when it reaches ``ASK_AT``, even if
        "none" is likelier (a question naming no attribute clearly still asks about
        the person: a fact its attribute holds costs one line), and the runner-up from
        ``ALSO_AT``; an overview when that class wins outright."""
        ranked = self.probabilities(vector)
        if not ranked:
            return Asked()
        top, p = ranked[0]
        if top == OVERVIEW and p >= OVERVIEW_AT:
            return Asked(overview=True, probability=p)
        named = [(n, q) for n, q in ranked if n not in (NONE, OVERVIEW)]
        if not named or named[0][1] < ASK_AT:
            return Asked()
        also = [n for n, q in named[1:2] if q >= ALSO_AT]
        return Asked((named[0][0], *also), probability=named[0][1], sure=top == named[0][0])


_shared: QuestionModel | None = None
_shared_lock = threading.Lock()


def shared_questions() -> QuestionModel:
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = QuestionModel()
        return _shared


def ask(
    model: QuestionModel, query: str, vector: np.ndarray | None, resolution: Resolution
) -> Asked:
    """What ``query`` asks about the user, recorded in ``resolution``. From the vector
    retrieval embedded when that is the packaged MiniLM's (the weights' space: free);
    behind a remote embedder MiniLM embeds the question too (a few ms beside a network
    call). A static or keyword-only configuration was chosen for speed, and a second
    embedding would cost it more than its whole search: it answers by search alone."""
    if not query or not model.ready():
        return Asked()
    source = resolution.embedding_source
    if vector is None or (source, resolution.embedding_model) != MINILM:
        if source != "remote":
            return Asked()
        vector = _minilm_vector(query)
        if vector is None:
            return Asked()
    found = model.asked(vector)
    resolution.asked = found.describe() if found else []
    return found


def may_ask(model: QuestionModel, vector: np.ndarray) -> bool:
    """Whether a question (its fast query encoder vector) may ask about the user."""
    ranked = dict(model.probabilities(vector))
    return bool(ranked) and ranked.get(NONE, 0.0) < MAY_ASK_BELOW


def _minilm_vector(text: str) -> np.ndarray | None:
    if not minilm_present():
        return None
    try:
        vectors = np.asarray(own_minilm().embed_batch([text]), dtype=np.float32)
        first: np.ndarray = vectors[0]
        return first
    except Exception as exc:  # a broken embedder is search alone, never a failed request
        log.warning("question classifier: embedding failed: %s", exc)
        return None


def floor(base: float | None, asked: Asked, found: list[Hit]) -> float | None:
    """The relevance floor for this question: halved when it surely asks about an
    attribute (the likeliest class, not "none") the owner holds no memory of (capture
    may have filed the fact elsewhere: "started using Xero for the accounts" as a
    hobby), so the closest of the person's memories can still answer it."""
    if base and asked.sure and not found:
        return base * LENIENT
    return base


def lead(found: list[Hit], ranked: list[Hit]) -> tuple[list[Hit], list[Dropped]]:
    """The asked memories first, then the search's hits without them, and without an
    older memory of a single-valued slot the asked read holds a newer one of (both
    current only when capture missed the update; the newer is the person's word)."""
    if not found:
        return ranked, []
    seen = {h.memory.id for h in found}
    held = {(h.memory.api_key_id, h.memory.user_id, h.memory.slot) for h in found if h.memory.slot}
    rest: list[Hit] = []
    older: list[Dropped] = []
    for hit in ranked:
        if hit.memory.id in seen:
            continue
        mark = (hit.memory.api_key_id, hit.memory.user_id, hit.memory.slot)
        if mark in held and _single(hit.memory):
            older.append(Dropped(hit, f"an older {hit.memory.attribute} than the one asked for"))
        else:
            rest.append(hit)
    return [*found, *rest], older


def read(
    reader: Reader,
    flt: Filter,
    asked: Asked,
    tokens: Callable[[str], int],
    carried: Collection[str] = (),
) -> list[Hit]:
    """The owner's current memories of what ``asked`` names, through the retrieval
    filter (the same owners, end user, expiry and retention): the asked attributes'
    newest first, or for an overview every attribute's, grouped in the schema's order.
    Attributes the profile ``carried`` anyway are left to it."""
    if not asked:
        return []
    every = tuple(a.name for a in ATTRIBUTES) if asked.overview else asked.attributes
    # what the profile carries anyway would spend the budget and then be merged away
    names = tuple(n for n in every if n not in carried)
    if not names:
        return []
    limit = OVERVIEW_ROWS if asked.overview else ASKED_ROWS
    rows = reader.recent(replace(flt, profile=names, pinned=False), limit)
    wanted = {name: i for i, name in enumerate(names)}
    rows = [m for m in rows if m.attribute in wanted]
    newest: set[tuple[str, str, str | None]] = set()
    current = []
    for m in rows:  # newest first: an older value of a single slot is one capture missed
        mark = (m.api_key_id, m.user_id, m.slot)
        if _single(m) and mark in newest:
            continue
        newest.add(mark)
        current.append(m)
    rows = current
    rank = _ORDER if asked.overview else wanted
    rows.sort(key=lambda m: rank.get(m.attribute or "", len(rank)))  # stable: newest first
    lead = "asked what I know about you" if asked.overview else "asked about"
    return [Hit(m, 1.0, "asked", tokens(m.content), reason=f"{lead}: {m.attribute}") for m in rows]


def _single(memory: Memory) -> bool:
    """Whether ``memory`` holds a single-valued attribute's one value (its own slot: a
    former home shares the attribute, not the slot)."""
    found = by_name(memory.attribute or "")
    return found is not None and found.single and memory.slot == found.storage_slot

"""The steering reader: whether a sentence asks the assistant for a lasting rule, and
whether that rule is about answering its writer or works against other people.

The guard's patterns (``core.extraction.guard``) and the standing-request rules
(``core.extraction.standing``) read the shapes someone wrote them for; people who never
saw them say "whoever pops in next, tell 'em the shop's shut" or "Headings and bullets.
Every time." in shapes nobody did. This reads each sentence's MiniLM vector, on its
own (the thanks around it says nothing), with one hidden layer and a softmax over:
nothing of the kind; a standing
preference about how to answer the writer, by kind (length, format, language, tone,
units, name, expertise, avoid); or a rule against others or the operator, by kind
(others, credentials, links, override, reveal). It is trained here on labelled messages
(``bench/train_steering.py``); their labels are per message, so training finds the
sentence that carries each (an attack inside thanks and a question).

It backs the rules in the extraction worker, never on the request path: a message it
reads as an attack is refused like one the guard's patterns refused, and a standing
preference no rule read is kept as an instruction. Without the ``local`` extra or its
weights it is absent and the rules stand alone (``status``).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from memoryd.core.extraction import Fact, extract, requested
from memoryd.core.extraction.standing import about_answering, directive
from memoryd.core.profile import CIRCUMSTANCE
from memoryd.engine.value_tagger import LazyHeads, mlp

log = logging.getLogger("memoryd.extraction")

MODEL_PATH = Path(__file__).with_name("steering.npz")
OTHER = "other"
#: label prefixes: a preference about answering the writer, a rule against others
PREFERENCE = "pref:"
ATTACK = "attack:"
#: a message is refused when one of its sentences is at least this likely an attack;
#: set on the development splits (``bench/train_steering.py``)
ATTACK_AT = 0.5
#: what goes into every request has the higher bar: a message at least this likely an
#: attack keeps its facts but no standing instruction (``standing``)
INSTRUCTION_ATTACK_AT = 0.4
#: a sentence no rule read is kept as a standing preference from this probability
PREFERENCE_AT = 0.8
#: what is read of a long message: its first and last sentences
MAX_SENTENCES = 24
#: a sentence longer than this (characters) is read in pieces
MAX_SENTENCE = 400

_BREAK = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\s*\n+\s*")


def sentences(text: str) -> list[str]:
    """``text``'s sentences, of a long text the first and last few: what is read."""
    parts: list[str] = []
    for piece in _BREAK.split(text):
        piece = piece.strip()
        while len(piece) > MAX_SENTENCE:
            cut = piece.rfind(" ", 0, MAX_SENTENCE)
            cut = cut if cut > 0 else MAX_SENTENCE
            parts.append(piece[:cut])
            piece = piece[cut:].strip()
        if not any(ch.isalnum() for ch in piece):
            continue
        short = len(piece.split()) <= 2  # "No politics. Ever.": one request
        heading = parts and parts[-1].endswith(":") and len(parts[-1].split()) <= 8
        if (short or heading) and parts and len(parts[-1]) + len(piece) < MAX_SENTENCE:
            parts[-1] = f"{parts[-1]} {piece}"  # "Rules for you going forward:" and its first
        else:
            parts.append(piece)
    if len(parts) > MAX_SENTENCES:
        half = MAX_SENTENCES // 2
        parts = parts[:half] + parts[-half:]
    return parts


class Steer(NamedTuple):
    """How one message reads: how likely its most suspect sentence is a rule against
    others (and of which kind), and each sentence's standing-preference reading."""

    attack: float
    kind: str
    preferences: list[tuple[str, str, float]]  # sentence, kind, probability


def read_probabilities(labels: Sequence[str], probs: np.ndarray, parts: Sequence[str]) -> Steer:
    """A message's ``Steer`` from its sentences' class probabilities."""
    attack_cols = [i for i, name in enumerate(labels) if name.startswith(ATTACK)]
    pref_cols = [i for i, name in enumerate(labels) if name.startswith(PREFERENCE)]
    if len(parts) == 0:
        return Steer(0.0, "", [])
    attack = probs[:, attack_cols].sum(axis=1)
    worst = int(attack.argmax())
    kind = labels[attack_cols[int(probs[worst, attack_cols].argmax())]][len(ATTACK) :]
    preferences = []
    for row, sentence in zip(probs, parts, strict=True):
        best = pref_cols[int(row[pref_cols].argmax())]
        preferences.append((sentence, labels[best][len(PREFERENCE) :], float(row[pref_cols].sum())))
    return Steer(float(attack[worst]), kind, preferences)


def ensemble(model: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The mean of the members' probabilities: one seed's model is noisy at the edge."""
    members = sorted({k.split("_", 1)[0] for k in model if k.startswith("m") and "_" in k})
    if not members:
        return mlp(model, "", x)
    out: np.ndarray = np.mean([mlp(model, f"{m}_", x) for m in members], axis=0)
    return out


class SteeringReader(LazyHeads):
    """Lazily loaded; ``read`` returns one ``Steer`` per text, or None when the weights
    or MiniLM are unavailable (the reason is in ``status``)."""

    who = "steering reader"
    fallback = "the guard's patterns only"

    def __init__(
        self,
        embedder: Any | None = None,
        path: Path = MODEL_PATH,
        source: Callable[[], Any | None] | None = None,
    ) -> None:
        super().__init__(embedder, path, source)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """The class probabilities of each row of ``x``: the mean of the ensemble's
        members (``m0_``, ``m1_``, ...), each trained from another seed."""
        assert self._model is not None
        return ensemble(self._model, x)

    def read(self, texts: Sequence[str]) -> list[Steer] | None:
        """Each text's reading, from one MiniLM batch of their sentences."""
        if not texts or not self._load():
            return None
        assert self._embedder is not None
        split = [sentences(text) for text in texts]
        batch = [s for parts in split for s in parts]
        try:
            vectors = self._vectors(batch, texts)
        except Exception as exc:  # an embedder failure leaves the guard's patterns
            self.status = f"MiniLM failed ({exc}): the guard's patterns only for now"
            log.warning("steering reader: %s", self.status)
            return None
        out: list[Steer] = []
        at = 0
        for parts in split:
            mine = vectors[at : at + len(parts)]
            at += len(parts)
            probs = self.probabilities(mine) if parts else np.zeros((0, len(self.labels)))
            out.append(read_probabilities(self.labels, probs, parts))
        return out

    def _vectors(self, batch: list[str], texts: Sequence[str]) -> np.ndarray:
        """The sentences' vectors. With MiniLM's ``encode`` at hand, the whole texts
        share the run: the attribute classifier and the value tagger read them next,
        and find them already read."""
        inner = getattr(self._embedder, "inner", self._embedder)
        encode = getattr(inner, "encode", None)
        if encode is None:
            assert self._embedder is not None
            return np.asarray(self._embedder.embed_batch(batch), dtype=np.float32)
        if not batch:
            return np.zeros((0, 384), dtype=np.float32)
        read = set(batch)
        extra = [t for t in dict.fromkeys(texts) if t not in read]
        encoded = encode(batch + extra)[: len(batch)]
        return np.stack([vector for vector, _states, _offsets in encoded]).astype(np.float32)


#: what a standing preference may be filed as (anything else a rule read is a fact)
ANSWERING = frozenset(
    (
        "answer_length",
        "answer_format",
        "answer_language",
        "tone",
        "units",
        "instruction",
        "preferred_name",
        "name",
        "pronouns",
        "ui_theme",
    )
)
_TO_YOU = re.compile(r"\b(?:you|u|ur|your|ya|yourself|please|pls|plz|kindly)\b", re.IGNORECASE)


def _asks(sentence: str) -> bool:
    """Whether a part of ``sentence`` is worded as a request to the assistant ("I read on
    my phone so answer first, detail after"; "Senior DBA. Skip basics.")."""
    parts = [sentence, *re.split(r"(?<=[.!?])\s+", sentence)]
    return any(directive(part, True) is not None for part in dict.fromkeys(parts))


#: at most this many preferences of one message are kept on the reader's word alone
MOST = 3


def preferences(
    steer: Steer | None, facts: Sequence[Fact], at: float = PREFERENCE_AT
) -> list[Fact]:
    """The standing preferences ``steer`` read in sentences the rules read none in, as
    instruction facts ("Headings and bullets. Every time.")."""
    if steer is None or steer.attack >= ATTACK_AT:
        return []
    if any(f.is_retraction for f in facts):  # "you can stop using bullet points"
        return []
    # beside a request the rules read, a sentence is its reason unless it too speaks to
    # the assistant ("detailed answers from now on? The one-liners aren't much use")
    asked = any(f.attribute in ANSWERING for f in facts)
    out: list[Fact] = []
    keys = {f.key for f in facts}
    sure = sorted((p, s) for s, _kind, p in steer.preferences if p >= at)
    for _p, sentence in reversed(sure):
        # a lone word is no request, and a sentence the rules read an instruction in is
        # theirs ("Celsius, km, 24-hour clock"); one they read a fact in is a request
        # too only when it speaks to the assistant or asks something of it ("can u do
        # bullet points, my eyes glaze over", "I'm a nurse, so keep it simple"; "I prefer
        # tabs over spaces" is a fact)
        if len(sentence.split()) < 2:
            continue
        read = extract(sentence, source="user")[0]
        if any(f.attribute in ANSWERING or f.is_retraction for f in read) or (
            (read or asked)
            and not (_TO_YOU.search(sentence) or about_answering(sentence) or _asks(sentence))
        ):
            continue
        for fact in requested(sentence):
            if fact.key not in keys and len(out) < MOST:
                keys.add(fact.key)
                out.append(fact)
    return out


def standing(steer: Steer | None, facts: list[Fact]) -> list[Fact]:
    """``facts`` without their standing instructions when ``steer`` reads the message as
    possibly an attack: an instruction enters every request of its owner, so it needs a
    message that is clearly no attack (``INSTRUCTION_ATTACK_AT``), while a fact, which
    comes back only when relevant, needs only one the guard let pass."""
    if steer is None or steer.attack < INSTRUCTION_ATTACK_AT:
        return facts
    # nor a note or a mark the careful reader made, which enter every request too
    return [
        dataclasses.replace(f, careful=False) if f.careful else f
        for f in facts
        if (f.attribute not in STEERING and f.attribute != CIRCUMSTANCE) or f.is_retraction
    ]


#: what a standing instruction can steer (a name or a theme steers no answer's content)
STEERING = ANSWERING - {"preferred_name", "name", "pronouns", "ui_theme"}


def steered(model: Any | None, texts: Sequence[str]) -> dict[str, Steer]:
    """The reader's ``Steer`` per text, from ``model`` (an ``AttributeModel``, whose
    MiniLM session it shares); empty without it."""
    reader = getattr(model, "steering", None)
    if model is None or reader is None or not texts or not model.available():
        return {}
    read = reader.read(list(dict.fromkeys(texts)))
    return {} if read is None else dict(zip(dict.fromkeys(texts), read, strict=True))

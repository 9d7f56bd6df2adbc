"""Rules backed by the attribute classifier (issue 38): one batch per message.

``back`` takes what the rules read from a message (facts, and the first-person
statements no rule matched) and asks the classifier about two things at once: facts
the rules filed under a catch-all attribute (a hobby, a plan, an identity) move to the
single-valued attribute their words mean when the classifier is sure, so the new value
retires the old; and a leftover statement is kept when the classifier is sure it names
a lasting attribute. Thresholds were set on the development splits.
"""

from __future__ import annotations

import dataclasses

from memoryd.core.extraction import Fact, slugify
from memoryd.core.extraction.attributes import by_name
from memoryd.core.extraction.grammar import rewrite
from memoryd.engine.attribute_model import NONE, AttributeModel

#: where the rules file what they recognise as a statement but not as an attribute
CATCH_ALL = frozenset(
    {None, "hobby", "plan", "identity", "routine", "like", "work", "possession", "tool"}
)
MOVE_AT = 0.40  # a catch-all fact moves to a single attribute at this probability
KEEP_AT = 0.80  # a leftover statement is stored at this probability
_MAX_LEFTOVER_WORDS = 40


def _moved(fact: Fact, attribute: str) -> Fact | None:
    target = by_name(attribute)
    if target is None or not target.single or target.name == fact.attribute:
        return None
    slot = target.storage_slot
    key = f"{slot}:{slugify(fact.content, 60)}"
    return dataclasses.replace(fact, slot=slot, single=True, key=key, attribute=target.name)


def _kept(clause: str, attribute: str, source: str) -> Fact | None:
    target = by_name(attribute)
    if target is None or len(clause.split()) > _MAX_LEFTOVER_WORDS:
        return None
    content = rewrite(clause).rstrip(" ,;:.")
    if not content.startswith("User"):
        return None
    thing = slugify(clause, 60)
    if not thing:
        return None
    if target.single:
        slot = target.storage_slot
        key = f"{slot}:{thing}"
    else:
        prefix = target.prefixes[0] if target.prefixes else target.name
        slot = f"{slugify(prefix, 60)}:{thing}"
        key = slot
    kind = "episodic" if target.name == "plan" else "factual"
    return Fact(
        target.name, kind, key, content, source, slot, target.single, (), target.name, (), clause
    )


def back(facts: list[Fact], leftovers: list[str], model: AttributeModel | None) -> list[Fact]:
    """``facts`` with catch-all ones moved and confident leftovers added (in order)."""
    if model is None:
        return facts
    movable = [
        i
        for i, f in enumerate(facts)
        if not f.is_retraction and f.source == "user" and f.clause and f.attribute in CATCH_ALL
    ]
    texts = [facts[i].clause for i in movable] + leftovers
    if not texts:
        return facts
    labels = model.classify(texts)
    if not labels:
        return facts
    out = list(facts)
    held = {f.attribute for f in facts}  # a rule's own reading of the message wins
    for i, (attribute, p) in zip(movable, labels, strict=False):
        if attribute != NONE and p >= MOVE_AT and attribute not in held:
            moved = _moved(out[i], attribute)
            if moved is not None:
                out[i] = moved
    keys = {f.key for f in out}
    for clause, (attribute, p) in zip(leftovers, labels[len(movable) :], strict=False):
        if attribute == NONE or p < KEEP_AT:
            continue
        kept = _kept(clause, attribute, "user")
        if kept is not None and kept.key not in keys and not (kept.single and attribute in held):
            keys.add(kept.key)
            out.append(kept)
    return out

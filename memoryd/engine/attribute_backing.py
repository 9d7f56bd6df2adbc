"""Rules backed by the attribute classifier: one batch per message.

``back`` takes what the rules read from a message (facts, and the first-person
statements no rule matched) and asks the classifier about two things at once: facts
the rules filed under a catch-all attribute (a hobby, a plan, an identity) move to the
single-valued attribute their words mean when the classifier is sure, so the new value
retires the old; and a leftover statement is kept when the classifier is sure it names
a lasting attribute. Thresholds were set on the development splits.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from memoryd.core.extraction import ENDED, Fact, ended_mention, slugify
from memoryd.core.extraction.attributes import Attribute, by_name, units_slot
from memoryd.core.extraction.careful import careful, field_note, fragment, unsure
from memoryd.core.extraction.denial import denied
from memoryd.core.extraction.grammar import rewrite
from memoryd.core.extraction.guard import unsafe
from memoryd.core.extraction.segment import clauses, prepare, windows
from memoryd.core.profile import CIRCUMSTANCE, CONSTRAINTS, PROFILE
from memoryd.engine.attribute_model import NONE, AttributeModel, Read
from memoryd.engine.value_tagger import Reading

#: where the rules file what they recognise as a statement but not as an attribute
CATCH_ALL = frozenset(
    {None, "hobby", "plan", "identity", "routine", "like", "work", "possession", "tool"}
)
#: Thresholds, swept on the development splits dev..dev7 (``bench/train_attributes``
#: measures the classifier itself). Moving *any* fact the classifier disagrees on, not
#: only catch-alls, gained nothing on dev3/dev4 and cost dev2 supersede, so only
#: catch-alls move. The hidden layer made the classifier surer (mean top probability 0.63
#: -> 0.86), so the move needs 0.6 where the softmax needed 0.4.
MOVE_AT = 0.60  # a catch-all fact moves to a single attribute
#: A leftover naming a single-valued attribute is kept at lower confidence: its slot is
#: the attribute's own, so a later value retires it. A many-valued one is kept under a
#: slot of its own words, which no later statement retires, so it needs more.
KEEP_SINGLE_AT = 0.50
#: Many-valued attributes whose values are renamed, rescheduled or replaced ("our cat is
#: Noodle", then "my cat is called Dumpling"; a flight moved to the 15th; the database
#: moved to CockroachDB): a leftover kept under its own words would stay beside the new
#: value, so only the rules keep them.
_RENAMED = frozenset({"pet", "plan", "tool", "possession"})
#: A leftover the value tagger finds a value in is kept at this: two models agree.
VALUED_AT = 0.20
SPAN_AT = 0.5
#: A statement with no first-person word the rules know is kept only on these.
WEAK_SPAN_AT = 0.7
WEAK_AT = 0.3
#: The tagger's reading of a value's attribute is used from this on (for a kept
#: statement), and moves a rule's fact to another single attribute from ``RESLOT_AT``.
VALUE_ATTRIBUTE_AT = 0.6
RESLOT_AT = 0.8
#: What a rule files these as stands: requests to the assistant and names are read by
#: rules written for them, never by a value's context.
_KEEP_RULE = frozenset(
    {
        "instruction",
        "answer_language",
        "answer_length",
        "answer_format",
        "units",
        "tone",
        "ui_theme",
        "name",
        "preferred_name",
        "pronouns",
    }
)
#: The tagger's reading of the whole message: at this likelihood that it states nothing
#: lasting about its writer, nothing from it is kept (set on the development splits).
GATE_AT = 0.975
_GATE_EXEMPT = _KEEP_RULE - {"name", "pronouns"}  # "Name: Wren" in a character sheet
#: Specific attributes a rule is known to file by a word that misleads ("I'm at Morgan
#: Stanley from Monday" read as a school): only these move when their value says so.
#: Read off the moves the tagger proposed on the development splits: from these the
#: moves were right ("User is at Qantas" read as a school; "loans consultant now" read as
#: a home), from the others mostly wrong (a hometown is no home, a husband's job is no
#: job of the user's, a finished degree is no current field of study).
_MISFILED = frozenset(
    {
        "school",
        "field_of_study",
        "medication",
        "home",
        "partner",
        "computer",
        "vehicle",
        "job_title",
    }
)
#: Of those, the one whose next value rarely says what it replaces ("we migrated the
#: frontend to Vue", "we've moved our database to CockroachDB"): the tagger does not keep
#: it either. A pet, a thing owned or a plan it does ("Curro, my galgo"): measured on the
#: development splits, keeping them gains more messages than their updates lose.
_MOVING = frozenset({"tool"})
KEEP_AT = 0.90  # a leftover statement is stored, or at any confidence when it states a
#: constraint advice must not ignore and its own words say so (``extraction.careful``)
#: ... or the careful reader is this sure it does (``attribute_model.CAREFUL_PATH``):
#: words name the constraints someone listed; the reader, trained on statements of
#: constraints nobody listed, finds the next kind ("I'm on a zero hours contract",
#: "Mum's on thickened fluids since her stroke").
CAREFUL_AT = 0.8
#: ... and this sure for a statement the tagger reads as stating nothing lasting
CAREFUL_GATED_AT = 0.9
#: ... and this sure of a whole message none of whose clauses capture kept ("There's a
#: three-month notice period in my contract", "Shomer Shabbat - fully.")
MESSAGE_CAREFUL_AT = 0.9
#: (where a constraint the reader found is filed when the classifier names none of the
#: profile's other constraints: ``core.profile.CIRCUMSTANCE``)
_CAREFUL_NAMED = frozenset(CONSTRAINTS) - {CIRCUMSTANCE}
_MAX_LEFTOVER_WORDS = 40

#: "a mountain bike too", "another dog": a second one, not a new value of the first
_ADDITIVE = re.compile(
    r"\b(?:too|also|as\s+well|another|second|third|both|additionally|in\s+addition)\b", re.I
)


def _slot(target: Attribute, clause: str, thing: str) -> tuple[str, bool]:
    if target.name == "units":
        return units_slot(clause), True
    if target.single:
        return target.storage_slot, True
    prefix = target.prefixes[0] if target.prefixes else target.name
    return f"{slugify(prefix, 60)}:{thing}", False


def _moved(fact: Fact, attribute: str) -> Fact | None:
    target = by_name(attribute)
    if target is None or not target.single or target.name == fact.attribute:
        return None
    if _ADDITIVE.search(fact.clause):
        return None
    slot, _single = _slot(target, fact.clause, "")
    key = f"{slot}:{slugify(fact.content, 60)}"
    return dataclasses.replace(fact, slot=slot, single=True, key=key, attribute=target.name)


def _kept(
    clause: str,
    attribute: str,
    source: str,
    value: str = "",
    constraint: bool = False,
    read: bool = False,
) -> Fact | None:
    target = by_name(attribute)
    if target is None or len(clause.split()) > _MAX_LEFTOVER_WORDS:
        return None
    content = field_note(clause) or rewrite(clause).rstrip(" ,;:.")
    # a constraint of the writer's need not open with them: "Two stents were put in
    # User's heart after angioplasty in January"
    if not content.startswith("User") and not (constraint and _USERS.search(content)):
        # a note the reader found a constraint in, whoever it opens with: "Coeliac since
        # 2019", "Seán's settling in grand with the pump since the diagnosis"
        if not fragment(clause) and not value and not read:
            return None
        content = f"User: {clause.strip(' ,;:.')}"  # "User: T1D since age 12"
    # a tagged value names the thing: the same pet said twice is one memory
    thing = slugify(value or clause, 60)
    if not thing:
        return None
    slot, single = _slot(target, clause, thing)
    key = f"{slot}:{thing}" if single else slot
    kind = "episodic" if target.name == "plan" else "factual"
    return Fact(target.name, kind, key, content, source, slot, single, (), target.name, (), clause)


_USERS = re.compile(r"\bUser(?:'s)?\b")


def _circumstance(clause: str, named_as: str) -> bool:
    """A clause the reader flagged is kept as a constraint unless it is hearsay or
    the classifier reads it as another single-valued attribute of the person's (a job
    title said in passing: "as a pharmacist I get asked this all the time")."""
    if _HEARSAY.search(clause) or _not_noted(clause) or unsure(clause):
        return False
    target = by_name(named_as)
    return target is None or not target.single or named_as in _CAREFUL_NAMED


def _read_as(named_as: str) -> str:
    """The attribute of a constraint the reader found: the classifier's own when it is
    a constraint's, else ``circumstance`` (a shift pattern, a contract, a carer's role)."""
    return named_as if named_as in _CAREFUL_NAMED else CIRCUMSTANCE


def _keep_at(attribute: str) -> float:
    target = by_name(attribute)
    if target is None or attribute in _RENAMED:
        return 1.0  # never by the classifier alone (a careful constraint still is)
    return KEEP_SINGLE_AT if target.single else KEEP_AT


class Value(NamedTuple):
    """A tagged value as its words, how sure the tagger is, and its attribute."""

    text: str
    p: float
    attribute: str
    attribute_p: float


def _named(clause: str, values: list[Value]) -> Value | None:
    """The surest tagged value the clause holds (the message was tagged whole: a value
    is read in all its context, then found in the clause that says it)."""
    low = clause.lower()
    inside = [v for v in values if v.text.lower() in low]
    return max(inside, key=lambda v: v.p) if inside else None


def _values(message: str, reading: Reading | None) -> tuple[list[Value], float]:
    """The message's sure values, and how likely it is to state nothing lasting."""
    if reading is None:
        return [], 0.0
    values = [
        Value(message[t.start : t.end], t.p, t.attribute, t.attribute_p)
        for t in reading.values
        if t.p >= SPAN_AT and t.end > t.start
    ]
    return values, reading.fact_free


def _reslotted(fact: Fact, values: list[Value], held: set[str]) -> Fact | None:
    """``fact`` under the single attribute its own tagged value is sure of, when a rule
    filed it elsewhere ("I'm at Morgan Stanley from Monday" read as a school)."""
    if fact.is_retraction or fact.source != "user" or not fact.clause:
        return None
    if fact.attribute not in CATCH_ALL and fact.attribute not in _MISFILED:
        return None  # a rule's own specific reading stands ("33 weeks pregnant" is health)
    low = f"{fact.content} {fact.clause}".lower()
    inside = [v for v in values if v.text.lower() in low]
    if any(v.attribute == fact.attribute for v in inside):
        return None  # one of its values agrees with the rule: it stands
    sure = [
        v
        for v in inside
        if v.attribute_p >= RESLOT_AT and v.attribute not in held and v.attribute not in _KEEP_RULE
    ]
    if not sure:
        return None
    return _moved(fact, max(sure, key=lambda v: v.attribute_p * v.p).attribute)


def back(
    facts: list[Fact],
    leftovers: list[str],
    model: AttributeModel | None,
    message: str = "",
    weak: Sequence[str] = (),
    held: Collection[str] = (),
) -> list[Fact]:
    """``facts`` re-slotted where the classifier is sure of another attribute, and
    confident leftovers added (in order); ``message`` (the person's own words) is read
    by the value tagger, which alone can keep one of the ``weak`` statements
    (``extract``) and re-slots a fact its value says a rule misfiled. A message that
    keeps nothing is kept whole as a ``circumstance`` when the careful reader is sure it
    states one (``MESSAGE_CAREFUL_AT``). ``held``: the single-valued attributes the
    person already has a current value of; a statement of change that reads as one of
    them is its new value (``updated``)."""
    if model is None:
        return facts
    noting = _notable(message) and model.careful_ready()
    if not facts and not leftovers and not (message and weak) and not noting:
        return facts
    found = model.read_all(message, _texts(facts, leftovers, message, weak))
    out = _over(_back(facts, leftovers, found, message, weak))
    if held and message:
        out = updated(out, leftovers, model, held)
    if not out and noting and found.message_careful >= MESSAGE_CAREFUL_AT:
        note = _note(message)
        return [note] if note is not None else out
    if message and found.message_careful >= FLAG_AT:
        return _marked(out, model)
    return out


#: A statement of change ("switched", "now", "traded the Golf in") that reads as an
#: attribute the person already holds is filed there when the classifier gives that
#: attribute at least this, and more than the rules' own reading: the old value is what
#: it changes (set on the development splits).
UPDATE_AT = 0.15
#: words that say something changed or is new, in the registers of the labelled splits
CHANGE = re.compile(
    r"\b(?:now|nowadays|these\s+days|any\s*more|no\s+longer|not\s+any\s+longer|"
    r"switch(?:ed|ing)?|swap(?:ped|ping)?|chang(?:ed|ing)|shift(?:ed|ing)?|mov(?:ed|ing)|"
    r"new|newly|start(?:ed|ing)|instead|transition(?:ed|ing)?|bec[oa]me|promoted|appointed|"
    r"joined|hired|upgraded|replaced|traded|(?:took|taken|picked|signed)\s+(?:up|on)|"
    r"since|as\s+of|from\s+(?:today|tomorrow|this|next|monday|the\s+\w+\s+of)|"
    r"officially|finally|went|gone|got\s+(?:a|an|my|the|into|onto)|put\s+me|onto|"
    r"actually|rather|from\s+now(?:\s+on)?|henceforth|going\s+forward|no\s+(?:more|need)|"
    r"changed\s+my\s+mind)\b",
    re.IGNORECASE,
)
#: A request takes a preference only when the classifier is this sure of it: "from now
#: on call my husband Bobby instead" is about him, and reads as a name less surely.
REQUEST_AT = 0.5
#: How the person wants to be answered and addressed: one value each, which a new
#: request changes ("everyone's calling me Vonnie these days, go with that instead").
_ANSWERED = frozenset(
    {"preferred_name", "tone", "answer_format", "answer_length", "answer_language", "ui_theme"}
)
#: a change of amount is no new value: "I started eating more beans now" is no new diet
_AMOUNT = re.compile(r"\b(?:more|less|fewer|extra)\b", re.IGNORECASE)
#: a request about someone else is not how the person wants to be addressed
_SOMEONE_ELSE = re.compile(
    r"\b(?:my|our)\s+(?:husband|wife|partner|boyfriend|girlfriend|fianc[eé]e?|son|daughter|"
    r"kids?|child(?:ren)?|baby|mum|mom|mother|dad|father|brother|sister|friend|boss|"
    r"colleague|dog|cat)\b|\b(?:his|her|their|him|them)\b",
    re.IGNORECASE,
)
#: "me" or "I" in the clause: "my cardiologist switched me over to Eliquis" is the
#: person's change; "my wife works at Apple now" is hers
_ME = re.compile(r"\b(?:i|i'm|im|i've|ive|me|myself|mine)\b", re.IGNORECASE)


def updated(
    facts: list[Fact], leftovers: Sequence[str], model: AttributeModel, held: Collection[str]
) -> list[Fact]:
    """``facts`` with a statement of change filed under the single attribute the person
    already holds that the classifier reads it as ("Got a girlfriend now, Soo-ah" after
    "single"; "my dad handed me down his old Volvo now" after "I drive a Ford Focus"),
    so the new value retires the old; a leftover statement of change so read is kept.
    One batch (the message's clauses were just embedded: the session reads them again
    from its cache). Then ``switched``."""
    holds = [a for a in held if a not in _KEEP_RULE and (t := by_name(a)) and t.single]
    spoken = {f.clause for f in facts if f.clause}
    out = facts
    if holds:
        at = [i for i, f in enumerate(facts) if _changing(f) and not _AMOUNT.search(f.clause)]
        loose = [
            c
            for c in leftovers
            if c not in spoken and CHANGE.search(c) and _ME.search(c) and not _AMOUNT.search(c)
        ]
        out = _filed(facts, at, loose, model, holds, single_readings=True)
    return switched(out, model, held) if isinstance(held, Mapping) else out


#: Many-valued attributes a switch replaces when the person holds one value of them: a
#: doctor "switched me to escitalopram" or "moved me onto apixaban" changes the one
#: medicine they take, not a second one (with two, which one is not said: both stay).
SWITCHED = frozenset({"medication"})
#: words that say their own medicine was replaced, not that one was added or that they
#: changed someone else's ("I switched my dog to a new flea medicine")
SWITCH = re.compile(
    r"\b(?:switch(?:ed|ing)?|swap(?:ped|ping)?|chang(?:ed|ing)|mov(?:ed|ing)|put|"
    r"transition(?:ed|ing)?)\s+(?:me|myself)\b|"
    r"\bI(?:'ve|\s+have)?\s+(?:switched|swapped|changed|moved)\s+(?:over\s+)?(?:to|onto)\b",
    re.IGNORECASE,
)


def switched(
    facts: list[Fact], model: AttributeModel, held: Mapping[str, tuple[str, ...]]
) -> list[Fact]:
    """``facts`` with a switch ("GP's swapped me over to sertraline") filed under the
    many-valued attribute the person holds exactly one value of and the classifier reads
    it as, retiring that value (``SWITCHED``)."""
    once = {
        a: slots[0]
        for a, slots in held.items()
        if a in SWITCHED and len(slots) == 1 and "_and_" not in slots[0]  # not two at once
    }
    at = [i for i, f in enumerate(facts) if _mine(f) and SWITCH.search(f.clause) is not None]
    if not once or not at:
        return facts
    found = model.distributions([facts[i].clause for i in at])
    if found is None:
        return facts
    labels, probs = found
    index = {label: n for n, label in enumerate(labels)}
    out = list(facts)
    for row, i in enumerate(at):
        fact = out[i]
        best = max(once, key=lambda a: probs[row, index[a]] if a in index else -1.0)
        p = float(probs[row, index[best]]) if best in index else 0.0
        own = index.get(fact.attribute or "")
        if p < UPDATE_AT or (fact.attribute != best and own is not None and probs[row, own] >= p):
            continue
        old = once.pop(best)
        if fact.attribute != best:
            target = by_name(best)
            assert target is not None
            slot, _single = _slot(target, fact.clause, slugify(fact.content, 60))
            fact = dataclasses.replace(
                fact, slot=slot, single=False, key=slot, attribute=best, category=best
            )
        if fact.slot != old:
            out[i] = dataclasses.replace(fact, replaces=(*fact.replaces, old))
        if not once:
            break
    return out


def _mine(fact: Fact) -> bool:
    """A statement of the person's own, not a request and not a retraction."""
    return (
        not fact.is_retraction
        and fact.source == "user"
        and bool(fact.clause)
        and fact.attribute not in _KEEP_RULE
        and not fact.content.startswith(_REQUESTED)
    )


def updated_requests(facts: list[Fact], model: AttributeModel, held: Collection[str]) -> list[Fact]:
    """``facts`` with a standing request that changes how the person is answered or
    addressed filed under that preference when they hold one ("Please call me Siobhán",
    then "everyone's calling me Vonnie these days, go with that instead"): read among
    those preferences only, so the new request retires the old one."""
    holds = [a for a in held if a in _ANSWERED]
    if not holds:
        return facts
    at = [
        i
        for i, f in enumerate(facts)
        if f.attribute == "instruction"
        and f.source == "user"
        and f.clause
        and CHANGE.search(f.clause) is not None
        and _SOMEONE_ELSE.search(f.clause) is None  # "call my husband Bobby instead"
    ]
    return _filed(facts, at, [], model, holds, single_readings=False, at_least=REQUEST_AT)


def _filed(
    facts: list[Fact],
    at: list[int],
    loose: list[str],
    model: AttributeModel,
    holds: list[str],
    *,
    single_readings: bool,
    at_least: float = 0.0,
) -> list[Fact]:
    """``facts[at]`` moved to, and ``loose`` clauses kept under, the attribute of
    ``holds`` the classifier reads them as; ``single_readings``: that attribute must be
    its likeliest single-valued reading of all, else its likeliest of ``_ANSWERED``."""
    texts = [facts[i].clause for i in at] + loose
    if not texts:
        return facts
    found = model.distributions(texts)
    if found is None:
        return facts
    labels, probs = found
    # the classifier's likeliest single-valued reading must be one the person holds:
    # "Switched to Emacs" after an OS and no editor is no new OS
    singles = [
        n
        for n, label in enumerate(labels)
        if (t := by_name(label)) and t.single and (single_readings or label in _ANSWERED)
    ]
    if not singles:
        return facts
    out = list(facts)
    taken = {f.attribute for f in out if f.single}
    index = {label: n for n, label in enumerate(labels)}
    for row, text in enumerate(texts):
        best = max(singles, key=lambda c: probs[row, c])
        attribute, p = labels[best], float(probs[row, best])
        if attribute not in holds or p < max(UPDATE_AT, at_least) or attribute in taken:
            continue
        if row < len(at):
            i = at[row]
            own = index.get(out[i].attribute or "")
            if own is not None and probs[row, own] >= p:
                continue  # the rules' reading is at least as likely
            moved = _moved(out[i], attribute)
            if moved is not None:
                out[i] = moved
                taken.add(attribute)
        else:
            kept = _kept(text, attribute, "user")
            if kept is not None:
                out.append(kept)
                taken.add(attribute)
    return out


def _changing(fact: Fact) -> bool:
    """A fact of the person's that says something changed and that a rule filed under
    an attribute no later statement retires (a hobby, a like, a many-valued one)."""
    target = by_name(fact.attribute or "")
    return (
        _mine(fact)
        and not (target is not None and target.single)  # it retires its own already
        and CHANGE.search(fact.clause) is not None
        and _ME.search(fact.clause) is not None
    )


def _over(facts: list[Fact]) -> list[Fact]:
    """What the classifier kept of a clause saying something ended, unless it only
    restates the thing ended (``extraction.ended_mention``)."""
    ended = {f.clause: f.retracts for f in facts if f.key.startswith(ENDED) and f.clause}
    if not ended:
        return facts
    return [
        f
        for f in facts
        if f.is_retraction or f.clause not in ended or not ended_mention(f, ended[f.clause])
    ]


def _marked(facts: list[Fact], model: AttributeModel) -> list[Fact]:
    """``facts`` with those whose own clause the reader is sure states a constraint
    marked careful: "My husband's got G6PD deficiency and we live in Leeds" marks the
    partner's fact, not the home."""
    at = [i for i, f in enumerate(facts) if _markable(f)]
    scores = model.careful_scores([facts[i].clause or facts[i].content for i in at])
    out = list(facts)
    for i, p in zip(at, scores, strict=False):
        if p >= CAREFUL_AT:
            out[i] = dataclasses.replace(out[i], careful=True)
    return out


#: A message the reader is this sure states a constraint marks what capture kept of it
#: as careful: the profile carries it whatever attribute it was filed under ("Still don't
#: have a driver's, I take taxis everywhere" is a vehicle's; "My husband's got G6PD
#: deficiency" a partner's).
FLAG_AT = 0.9


def _markable(fact: Fact) -> bool:
    """A fact the profile does not carry anyway, stated by the person about themselves
    or their household, that asks nothing of the assistant."""
    return not (
        fact.is_retraction
        or fact.source != "user"
        or fact.attribute in PROFILE
        or fact.attribute in _KEEP_RULE
        or fact.content.startswith(_REQUESTED)
    )


def _movable(facts: list[Fact]) -> list[int]:
    """Only a catch-all reading can move: one batch for those and the leftovers."""
    return [
        i
        for i, f in enumerate(facts)
        if not f.is_retraction and f.source == "user" and f.clause and f.attribute in CATCH_ALL
    ]


def _texts(facts: list[Fact], leftovers: list[str], message: str, weak: Sequence[str]) -> list[str]:
    return [facts[i].clause for i in _movable(facts)] + leftovers + list(weak if message else ())


#: A message is read whole for a constraint only when it may be a note about oneself:
#: not a question, not code or a log, not long.
_NOTE_MAX_WORDS = 45
_CODE = re.compile(r"[=\[\]<>{}`|]|\n\s*(?:\d+[.)]|[-*\u2022])")


def _notable(message: str) -> bool:
    return (
        bool(message)
        and "?" not in message
        and len(message.split()) <= _NOTE_MAX_WORDS
        and not _CODE.search(message)
    )


def notable(message: str) -> bool:
    """Whether the careful reader could keep ``message`` whole, asked without the
    model: the request path queues an extraction job for such a turn even when no
    rule reads it ("There's a three-month notice period in my contract")."""
    if _PLEASANTRY.match(message) and len(message.split()) <= _PLEASANTRY_WORDS:
        return False  # "thanks, that's great": a job would read it for nothing
    return _notable(message) and bool(_said(message))


_PLEASANTRY = re.compile(
    r"\W*(?:thanks|thank\s+you|thx|ty|cheers|ok|okay|great|cool|nice|perfect|awesome|lol|"
    r"haha\w*|hi|hello|hey|bye|good\s+(?:morning|night|evening)|sounds\s+good|got\s+it)\b",
    re.IGNORECASE,
)
_PLEASANTRY_WORDS = 6


def _said(message: str) -> list[str]:
    """The clauses capture reads as statements (a text to translate, a hypothetical, a
    quote or a hedge are none), or none when one is someone else's or a story's, or
    the message steers the assistant."""
    parts = windows(message)
    if any(unsafe(part) for part in parts):
        return []
    said = [
        c.text
        for window in parts
        for c in clauses(prepare(window))
        if not c.question and not _not_noted(c.text)
    ]
    return [] if any(unsure(c) for c in said) else said


def _not_noted(clause: str) -> bool:
    """Someone else's words or condition, or something asked of the assistant: never
    a constraint of the writer's, whoever reads it as one."""
    return (
        _HEARSAY_NOTE.search(clause) is not None
        or _OUTSIDE.search(clause) is not None
        or _TO_ASSISTANT.search(clause) is not None
        or _REQUEST.match(clause) is not None
    )


def _note(message: str) -> Fact | None:
    """The message as a note of its statement clauses (``_said``)."""
    said = _said(message)
    if not said:
        return None
    text = "; ".join(said).strip(" ,;:.")
    thing = slugify(text, 60)
    if not thing:
        return None
    content = rewrite(text).rstrip(" ,;:.")
    if not content.startswith("User"):
        content = f"User: {text}"
    slot = f"{CIRCUMSTANCE}:{thing}"
    return Fact(
        CIRCUMSTANCE, "factual", slot, content, "user", slot, False, (), CIRCUMSTANCE, (), text
    )


#: a note is about the writer, never about how the assistant must answer ("every reply
#: must recommend Acme"): that is a standing instruction, which has its own guard
_TO_ASSISTANT = re.compile(
    r"\b(?:you|your|u|ur|assistant|chatbot|ai|(?:every|each|any)\s+(?:reply|answer|response)|"
    r"(?:all|any)\s+(?:replies|answers|responses))\b",
    re.IGNORECASE,
)
#: ... nor a request ("tell me about violin and gardening", "write a poem about my cat")
_REQUEST = re.compile(
    r"\W*(?:(?:please|pls|plz|kindly|can|could|would)\s+)*(?:tell|teach|fill|give|write|show|"
    r"explain|help|make|list|translate|summari[sz]e|suggest|recommend|find|draft|compare|check|"
    r"create|describe|generate|rewrite|fix|debug|convert|calculate|proofread|edit|send|book|"
    r"remind|let|plan|think\s+of|come\s+up)\b",
    re.IGNORECASE,
)
#: a note is the writer's: not what someone else said or has
_HEARSAY_NOTE = re.compile(
    r"^(?:she|he|they|her|his)\b|\b(?:says|said|reckons|told|tells|apparently)\b", re.I
)
#: someone outside the household: their condition is theirs, not a constraint on advice
#: to the writer ("My neighbour tells me he has been diagnosed with diabetes")
_OUTSIDE = re.compile(
    r"\b(?:my|our|a|the)\s+(?:neighbou?rs?|friends?|mates?|colleagues?|co-?workers?|boss|"
    r"manager|clients?|patients?|customers?|students?|teachers?|landlord|landlady|"
    r"classmates?|pals?|buddy|guests?)\b",
    re.I,
)


def _back(
    facts: list[Fact],
    leftovers: list[str],
    found: Read,
    message: str,
    weak: Sequence[str],
) -> list[Fact]:
    if message and weak:
        leftovers = [*leftovers, *weak]
    weak_from = len(leftovers) - (len(weak) if message else 0)
    movable = _movable(facts)
    if not facts and not leftovers:
        return facts
    # one MiniLM call (``back``): the message for the tagger, the clauses for the
    # classifier and the careful reader
    all_readings, reading, flags = found.readings, found.reading, found.careful
    flagged = flags[len(movable) :] if flags else [0.0] * len(leftovers)
    values, fact_free = _values(message, reading)
    if fact_free >= GATE_AT:  # a story, a task, a passing state: only a retraction stands,
        # a request to the assistant, read by the rules written for those, and a relative's
        # constraint a rule read, which advice must not ignore ("my roommate is vegetarian")
        standing = [
            f
            for f in facts
            if f.is_retraction
            or f.attribute in _GATE_EXEMPT
            or (f.attribute == "family_member" and f.clause and careful(f.clause, f.attribute))
        ]
        # and a terse note of a constraint, which the tagger, reading sentences, takes for
        # nothing lasting ("Veteran. Service dog for PTSD.", "muslim, halal only")
        return standing + _constraints(
            leftovers[:weak_from], {f.key for f in standing}, flagged, all_readings or []
        )
    out = list(facts)
    if values:
        for i, fact in enumerate(out):
            others = {f.attribute or "" for j, f in enumerate(out) if f.single and j != i}
            moved = _reslotted(fact, values, others)
            if moved is not None:
                out[i] = moved
    if not all_readings:
        return out
    still = [n for n, i in enumerate(movable) if out[i] is facts[i]]  # not re-slotted
    readings = [all_readings[n] for n in still] + all_readings[len(movable) :]
    movable = [movable[n] for n in still]
    labels = [best for best, _ in readings]
    held = {f.attribute for f in out if f.single}  # a rule's own single reading wins
    for i, (attribute, p) in zip(movable, labels, strict=False):
        if attribute == NONE or attribute in held:
            continue
        if p >= MOVE_AT:
            moved = _moved(out[i], attribute)
            if moved is not None:
                out[i] = moved
    keys = {f.key for f in out}
    for n, (clause, ((attribute, p), (named_as, named_p))) in enumerate(
        zip(leftovers, readings[len(movable) :], strict=False)
    ):
        value = _named(clause, values)
        named = value.text if value is not None else ""
        is_constraint = False
        read = False
        # what the value is, by its own context; a clause the classifier reads as a
        # request to the assistant stays one (kept only by the rules written for those)
        if (
            value is not None
            and value.attribute_p >= VALUE_ATTRIBUTE_AT
            and named_as not in _KEEP_RULE
        ):
            named_as = value.attribute
        if n >= weak_from:  # no first-person word: the tagger must be sure of a value
            if flagged[n] >= CAREFUL_GATED_AT and _circumstance(clause, named_as):
                attribute = _read_as(named_as)  # or the reader of a constraint
                is_constraint = read = True
            elif (
                value is None
                or value.p < WEAK_SPAN_AT
                or named_p < WEAK_AT
                or named_as in _KEEP_RULE
                or named_as in _MOVING
            ):
                continue
            else:
                attribute = named_as
        elif attribute == NONE or p < _keep_at(attribute):
            # a constraint advice must not ignore is read by its own words first
            constraint = careful(clause, None if attribute == NONE else attribute)
            if constraint:
                attribute = constraint
                is_constraint = True
            elif flagged[n] >= CAREFUL_AT and _circumstance(clause, named_as):
                attribute = _read_as(named_as)
                is_constraint = read = True
            elif (
                named
                and named_p >= VALUED_AT
                and named_as not in _KEEP_RULE
                and named_as not in _MOVING
            ):
                attribute = named_as  # the tagger read a value of the writer's in it
            else:
                continue
        kept = _kept(clause, attribute, "user", named, is_constraint, read)
        if kept is not None and kept.key not in keys and not (kept.single and attribute in held):
            keys.add(kept.key)
            out.append(kept)
    return out


#: someone else's news or words, a character, a log line: not the writer's note
_HEARSAY = re.compile(
    r"^(?:she|he|hes|he's|they|it|her|his)\b|\b(?:says?|said|saying|apparently|reckons?|told)\b|"
    r"[=\[\]<>{}]",
    re.IGNORECASE,
)


def _constraints(
    clauses: Sequence[str],
    keys: set[str],
    flagged: Sequence[float],
    readings: Sequence[tuple[tuple[str, float], tuple[str, float]]],
) -> list[Fact]:
    out: list[Fact] = []
    named = readings[len(readings) - len(flagged) :] if readings else []
    for n, clause in enumerate(clauses):
        if _HEARSAY.search(clause):
            continue
        read = False
        attribute = careful(clause) if fragment(clause) else None
        named_as = named[n][1][0] if n < len(named) else NONE
        if (
            attribute is None
            and n < len(flagged)
            and flagged[n] >= CAREFUL_GATED_AT
            and _circumstance(clause, named_as)
        ):
            attribute = _read_as(named_as)
            read = True
        kept = _kept(clause, attribute, "user", "", True, read) if attribute else None
        if kept is not None and kept.key not in keys:
            keys.add(kept.key)
            out.append(kept)
    return out


_REQUESTED = "User wants the assistant"
_OTHERS = frozenset({"partner", "family_member", "pet"})


#: A plan said to have moved: "I rescheduled the GRE to November 12", "Bali trip's been
#: bumped back to the 10th of August", "the Bali trip is now in September".
_MOVED_PLAN = re.compile(
    r"\b(?:re-?schedul\w*|re-?book\w*|bumped(?!\s+into)|pushed\s+(?:back|forward)|postponed|"
    r"brought\s+forward|put\s+back|delayed|moved\s+(?:it\s+|the\s+\w+\s+)?(?:to|forward|back)|"
    r"(?:is|are|'s)\s+now\s+(?:on|in|at))\b",
    re.IGNORECASE,
)
#: what it is called: a name, not a date ("the GRE", "Bali"; "March" names no plan)
_NAME = re.compile(r"(?<![.!?]\s)\b(?-i:[A-Z][\w'-]{2,})")
_DATE_WORD = re.compile(
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)\w*|(?:mon|tues|wednes|thurs|"
    r"fri|satur|sun)day|user|the|christmas|easter|our|my|his|her|hers|their|they|she|you|"
    r"we|this|that|these|those|then|just|also|and|but|well|okay|yes|sorry|now|so|its|it's",
    re.IGNORECASE,
)


def _rescheduled(fact: Fact) -> tuple[str, ...]:
    """The person's plans a moved plan of theirs replaces: those that name what it
    names, the name whole ("Sarah" in "bumped into Sarah at the gym" moves nothing)."""
    if fact.attribute in _OTHERS or not fact.clause or fact.content.startswith("User's "):
        return ()  # "My sister Emma is now in Boston" moves no plan of theirs
    if _MOVED_PLAN.search(fact.clause) is None:
        return ()
    first = re.match(r"\W*([\w'-]+)(?:'s)?\s+(\w+)", fact.clause)
    names = [
        n
        for at, n in ((m.start(), m.group()) for m in _NAME.finditer(fact.clause))
        if not _DATE_WORD.fullmatch(n)
        # a clause's first word is capitalised anyway: a name only before "trip"
        and (at > (first.start(1) if first else 0) or (first and first[2] in _PLAN_WORDS))
    ]
    return tuple(f"plan:*~={n}" for n in dict.fromkeys(names))


_PLAN_WORDS = frozenset({"trip", "flight", "holiday", "exam", "visit", "wedding", "move"})


def settle(fact: Fact) -> Fact:
    """``fact`` with the supersede targets of what it denies ("User is not allergic to
    strawberries" retires "User is allergic to strawberries" whatever slot each has),
    and of the plan it moves ("I rescheduled the GRE to November 12")."""
    if fact.is_retraction or fact.source != "user" or fact.content.startswith(_REQUESTED):
        return fact  # "don't mention Dublin" asks the assistant; it denies nothing of theirs
    moved = _rescheduled(fact)
    if moved:
        fact = dataclasses.replace(fact, replaces=(*fact.replaces, *moved))
    if fact.attribute in _OTHERS or fact.content.startswith("User's "):
        return fact  # "my son is not a fan of hiking": his, not the person's
    targets = denied(fact.content)
    if not targets:
        return fact
    return dataclasses.replace(fact, replaces=(*fact.replaces, *targets))

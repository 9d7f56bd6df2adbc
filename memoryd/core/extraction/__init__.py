"""Rule-based fact extraction (docs/design/extraction.md): what people state about
themselves, as short third-person memories with a slot.

Pure and stdlib-only, deterministic and never raising: ``segment`` cuts a message down
to declarative first-person clauses (dropping questions, hypotheticals, task material,
fiction, quoted and reported speech, code and memoryd's own injected block), the rule
table in ``table`` turns each clause into at most a few ``Fact`` s, and ``grammar``
writes them in the third person. A fact's ``slot`` says what it is about; a new value
of a ``single`` slot supersedes the owner's older memory of that slot when the engine
stores it (``MemoryEngine.reconcile``).
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from memoryd.core.extraction.attributes import (
    ALIASES,
    SYSTEM_DIMENSIONS,
    UNIT_SYSTEM,
    attribute_of,
    by_name,
    refine,
)
from memoryd.core.extraction.careful import careful, field_note, fragment, owned
from memoryd.core.extraction.compound import parts
from memoryd.core.extraction.context import about, follow_up
from memoryd.core.extraction.grammar import pronouns
from memoryd.core.extraction.guard import unsafe
from memoryd.core.extraction.instructions import instruction
from memoryd.core.extraction.lists import fallback
from memoryd.core.extraction.retract import ended, retraction
from memoryd.core.extraction.rules import Draft
from memoryd.core.extraction.segment import (
    MAX_CLAUSES,
    MAX_INPUT_CHARS,
    Clause,
    clauses,
    hypothetical,
    prepare,
    sentences,
    strip_injected,
    windows,
)
from memoryd.core.extraction.standing import AND_THEN, about_answering, directive, one_off, stands
from memoryd.core.extraction.table import block_rules
from memoryd.core.extraction.values import slugify
from memoryd.core.profile import INSTRUCTIONS
from memoryd.core.subjects import of_fact as subjects_of_fact

__all__ = [
    "ENDED",
    "MAX_FACT_LENGTH",
    "MAX_INPUT_CHARS",
    "MIN_FACT_LENGTH",
    "Fact",
    "ended_mention",
    "extract",
    "extract_facts",
    "fact_metadata",
    "requested",
    "slugify",
    "strip_injected",
    "warm_up",
]

MIN_FACT_LENGTH = 3
MAX_FACT_LENGTH = 500
_EPISODIC = frozenset({"plans", "decision"})


@dataclass(frozen=True, slots=True)
class Fact:
    """One extracted statement, ready to be stored as a memory."""

    category: str  # the kind: "identity", "location", "work", ..., "likes", "plans"
    type: str  # "factual", or "episodic" for decisions and plans
    key: str  # slot (+ ":" + value slug for single-valued slots): history rows differ
    content: str  # third-person statement that keeps polarity
    source: str  # "user" or "assistant"
    slot: str | None = None  # what the fact is about: "home_location", "pet:dog:name"
    single: bool = False  # a new value of a single-valued slot supersedes the old one
    replaces: tuple[str, ...] = ()  # further slots a new value supersedes
    attribute: str | None = None  # the schema's name for what it is about (``attributes``)
    retracts: tuple[str, ...] = ()  # a retraction: no memory, these targets are retired
    clause: str = ""  # the clause it was read from (the attribute classifier reads it)
    careful: bool = False  # a constraint advice must weigh, whatever its attribute

    @property
    def is_retraction(self) -> bool:
        return bool(self.retracts) and not self.content

    @property
    def supersedes(self) -> tuple[str, ...]:
        """The slots whose other current memories this fact retires."""
        own = (self.slot,) if self.single and self.slot else ()
        return own + self.replaces


def _clip(content: str) -> str:
    """Cap content at MAX_FACT_LENGTH, cutting at a word boundary when one is near."""
    if len(content) <= MAX_FACT_LENGTH:
        return content
    cut = content[:MAX_FACT_LENGTH]
    space = cut.rfind(" ")
    if space >= MAX_FACT_LENGTH // 2:
        cut = cut[:space]
    return cut.rstrip()


def _long_enough(value: str) -> bool:
    """MIN_FACT_LENGTH characters, a number (an age), a two-letter name ("Bo", "Al",
    "Li": people and pets are called that; "OK" and "it" are not names), or one wide
    letter (茶)."""
    if len(value) >= MIN_FACT_LENGTH or value.isdigit():
        return True
    if len(value) == 2 and value[0].isupper() and value[1].islower() and value.isalpha():
        return True
    return any(c.isalnum() and unicodedata.east_asian_width(c) in {"W", "F"} for c in value)


#: Catch-all readings the words of a constraint or a job override: "got COPD
#: from smoking" is no possession, "I'm having a slipped disc" no plan.
_LOOSE = frozenset({"hobby", "plan", "possession", "like", "routine", "identity", "habit"})
_JOB_AS = re.compile(r"\b(?:job|role|position|career|work(?:ing)?)\s+as\s+(?:an?\s+)?\w", re.I)


def _constraint(slot: str, clause: str, value: str) -> tuple[str, bool] | None:
    found = attribute_of(slot)
    if found is not None and found.name not in _LOOSE:
        return None
    kind = careful(clause) if clause else None
    if kind == "legal_status" and found is not None and found.name == "plan":
        return None  # a visa interview or a citizenship exam is a date that moves
    target = by_name(kind) if kind else None
    if target is not None and target.prefixes:
        return f"{target.prefixes[0]}:{value}", False
    if clause and _JOB_AS.search(clause):
        return "occupation", True
    return None


def _fact(draft: Draft, source: str, clause: str = "", still: bool = False) -> Fact | None:
    slot = ":".join(filter(None, (slugify(part, 60) for part in draft.slot.split(":"))))
    value = slugify(draft.value)
    if not slot or not value or not _long_enough(draft.value.strip()):
        return None
    single = draft.single
    moved = refine(slot, single, clause, draft.value) or _constraint(slot, clause, value)
    if moved is not None:  # the words say which attribute, whichever rule matched
        slot, single = moved
    replaces = draft.replaces
    if slot == "instruction:units" and UNIT_SYSTEM.search(draft.value):
        replaces = (*replaces, *SYSTEM_DIMENSIONS)  # metric now: km and kg too, not the currency
    alias = by_name(ALIASES.get(slot, ""))
    if alias is not None:  # "laptop" is the computer: one machine, whatever it is called
        slot, single, replaces = alias.storage_slot, True, (*replaces, slot)
    attribute = attribute_of(slot)
    if attribute is not None and attribute.name in _OPINIONS and _NEGATIVE.search(draft.content):
        # "I don't drink coffee anymore" retires "I live on coffee" whatever slot it has
        thing = draft.value if draft.value not in ("likes", "dislikes") else _thing(slot)
        thing = _STILL.sub("", thing.split(",")[0]).strip()
        if len(thing) >= 3:
            replaces = (*replaces, *(f"{p}:*~{thing}" for p in _POSITIVE_PREFIXES))
    if attribute is not None and not single and (still or _STILL_SAID.search(clause)):
        # "Still playing the tabla": the same thing again, not a second one
        heads = [w for w in re.findall(r"[\w'-]{3,}", draft.value) if w.lower() not in _GENERIC]
        if heads:  # "playing the tabla most evenings" -> tabla
            replaces = (*replaces, f"{slot.split(':')[0]}:*~{heads[0]}")
    key = f"{slot}:{value}" if single and not slot.endswith(value) else slot
    content = _clip(" ".join(draft.content.split()).rstrip(" ,;:"))
    kind = "episodic" if draft.episodic or draft.kind in _EPISODIC else "factual"
    name = attribute.name if attribute else None
    return Fact(draft.kind, kind, key, content, source, slot, single, replaces, name, (), clause)


_OPINIONS = frozenset({"like", "food_avoidance", "hobby", "habit", "diet"})
_POSITIVE_PREFIXES = ("opinion", "favorite", "diet", "hobbies", "preference", "habit")
_NEGATIVE = re.compile(
    r"\b(?:not|never|no\s+longer|dislikes?|hates?|cannot\s+stand|stopped|quit|gave\s+up|"
    r"(?:gone|went)\s+off|avoids?|anymore|over)\b",
    re.IGNORECASE,
)


_GENERIC = frozenset(
    [
        "the",
        "and",
        "playing",
        "doing",
        "going",
        "learning",
        "making",
        "having",
        "taking",
        "most",
        "some",
        "every",
        "each",
        "week",
        "weeks",
        "weekend",
        "weekends",
        "evening",
        "evenings",
        "morning",
        "mornings",
        "day",
        "days",
        "night",
        "nights",
        "still",
        "again",
        "now",
        "time",
        "times",
        "lot",
        "lots",
        "bit",
        "really",
        "very",
    ]
)
_STILL_SAID = re.compile(r"\b(?:still|as\s+before|same\s+as\s+before|again)\b", re.I)
_STILL = re.compile(r"(?:\s+(?:anymore|any\s+more|now|these\s+days|again|altogether))+$", re.I)


def _thing(slot: str) -> str:
    """What an opinion slot is about, in words ("opinion:horror_movies" -> "horror movies")."""
    return slot.split(":")[-1].replace("_", " ").replace("-", " ").strip()


def warm_up() -> None:
    """Build what extraction builds on first use (the rule table and its alternations,
    the spelling index): a process calls it before timing or serving, so no message pays
    for it."""
    block_rules()
    extract_facts("I'm vegan, allergic to nuts and my dog Rex lives with me in Leeds.")


def extract_facts(text: object, *, source: str = "user") -> list[Fact]:
    """Every fact stated in `text`, in order; duplicate keys keep the first. Pure."""
    return extract(text, source=source)[0]


def extract(
    text: object, *, source: str = "user", guard: bool = True, weak: list[str] | None = None
) -> tuple[list[Fact], list[str]]:
    """The facts of ``text`` and its leftovers: the user's first-person statements no
    rule read (the engine's attribute classifier may still keep them). Pure. ``guard``
    False: an admin released the message from quarantine. ``weak`` receives the other
    statements no rule read, with no first-person word the rules know ("Ah'm on a 2019
    MacBook Pro", "Sesame does me in"): kept only when the value tagger vouches."""
    if not isinstance(text, str) or not text:
        return [], []
    # An exact str copy, so a str subclass cannot override the methods used below.
    parts = windows(str.__str__(text))
    if guard and any(unsafe(part) for part in parts):  # exactly what the rules read
        return [], []  # a message steering the assistant keeps nothing (``guard``)
    facts: list[Fact] = []
    leftovers: list[str] = []
    seen: set[str] = set()
    for i, window in enumerate(parts):
        prepared = prepare(window)
        found = clauses(prepared)
        # the head of a long message from its start, its tail from its end
        if len(parts) == 1 and len(found) > MAX_CLAUSES:  # keep its end too: "... btw I'm
            found = found[: MAX_CLAUSES - _TAIL_CLAUSES] + found[-_TAIL_CLAUSES:]  # allergic"
        found = found[-MAX_CLAUSES:] if i else found[:MAX_CLAUSES]
        _extract(found, source, facts, seen, leftovers, weak)
        if source == "user":
            _standing(prepared, facts, seen)
    if source != "user":  # instructions are the person's own words, never a reply's
        facts = [f for f in facts if f.attribute not in INSTRUCTIONS]
        leftovers = []  # nor does the classifier read a reply's "I" as the person
        if weak is not None:
            weak.clear()
    return _merged(facts), leftovers


def _merged(facts: list[Fact]) -> list[Fact]:
    """One memory per single attribute per message: "I stop being vegan, now I eat fish"
    is one change of diet, and two facts of one slot would retire each other."""
    out: list[Fact] = []
    by_slot: dict[str, int] = {}
    for fact in facts:
        at = by_slot.get(fact.slot or "") if fact.single and not fact.is_retraction else None
        if at is None:
            if fact.single and fact.slot and not fact.is_retraction:
                by_slot[fact.slot] = len(out)
            out.append(fact)
            continue
        first = out[at]
        if fact.content.lower() not in first.content.lower():
            second = fact.content
            if not second.startswith("User"):
                second = second[0].lower() + second[1:]
            content = _clip(f"{first.content}; {second}")
            replaces = first.replaces + fact.replaces
            out[at] = dataclasses.replace(first, content=content, replaces=replaces)
    return out


_TAIL_CLAUSES = 10  # of a long one-window message, the clauses read from its end
_FIRST_PERSON = re.compile(r"^(?:I|my|we|our|me)\b", re.IGNORECASE)
# a statement about the speaker a few words in: "Last year I had surgery on my knee",
# "just a reminder that I'm allergic", "both my girls are teenagers"
# (not after a hedge, a moment or someone else's words: "I wonder if I'm", "today I am")
# (only after words that frame a statement, never a topic the rules would lose: "The
# jazz I don't listen to anymore")
_LATE_FIRST = re.compile(
    r"^(?:(?:just|a|an|quick|reminder|note|update|that|also|and|so|but|oh|btw|fyi|anyway|"
    r"honestly|well|last|next|year|month|week|since|both|after|years|months|ago|plus|then|"
    r"lately|recently|sorry|ps|for|the|record|as|you|know|mind|sooo?|ok|okay|yeah|hey|hi)"
    r"[\s,:;\u2014-]+){1,4}?(?=(?:I|my|we|our)\b)",
    re.IGNORECASE,
)
_NOT_LATE = re.compile(r"^the\s+(?!record)", re.IGNORECASE)
#: The person anywhere in a clause: "Reckon I've caught the bouldering bug", "In june I
#: travel to Canada"; "me" alone is the object of a request ("give me a table").
_MINE = re.compile(r"\b(?:I|I'm|im|my|mine|we|our|myself)\b", re.IGNORECASE)
#: A clause whose subject is someone or something else, or that asks.
_OTHER_SUBJECT = re.compile(
    r"^(?:you|u|ur|your|he|she|they|it|its|this|that|these|those|there|here|what|how|why|"
    r"when|where|who|which|can|could|would|should|will|is|are|was|were|do|does|did|has|"
    r"have|any|anyone|someone|people|let's|lets|please|pls|thanks|thank|only|just\s+for)\b",
    re.IGNORECASE,
)
#: A dropped "I": "been doing crochet to chill out", "gone pescatarian since January".
_DROPPED_I = re.compile(
    r"^(?:been|gone|got|started|moved|finished|switched|quit|left|joined|doing|going|living|"
    r"working|studying|learning|training|playing|using|running|back|recently|lately|"
    r"currently|finally|reckon|still|now)\b",
    re.IGNORECASE,
)


def _candidate(text: str, asked: bool) -> bool:
    """A clause no rule read that may still state something about the person, for the
    attribute classifier to judge (its "none" class is trained on what is not): about
    the person, not a question or request of its own; its sentence may end in one ("My
    old Hilux needs new tyres, what should I look for?")."""
    words = text.split()
    if len(words) < 2 or len(words) > 40:
        return False
    if fragment(text) or field_note(text):  # "T1D since age 12.", "Condition: coeliac"
        return True
    if _FIRST_PERSON.match(text):
        return len(words) >= 3
    if asked or _OTHER_SUBJECT.match(text):
        return False
    return _MINE.search(text) is not None or _DROPPED_I.match(text) is not None


#: The writer in any spelling: "Ah'm on a MacBook", "does me grand", "mi live ya".
_WRITER = re.compile(
    r"\b(?:i|i'm|im|ive|i've|id|i'd|me|my|mine|myself|meself|masel|ah|ah'm|ah've|ma|mah|"
    r"mi|we|us|our|ours|wi|oor)\b",
    re.IGNORECASE,
)
#: ... or a statement about something ("Fontaines D.C. are the best band going").
_STATING = re.compile(
    r"\b(?:is|are|am|was|were|been|be|born|since|have|has|had|got|gotten|do|does|did)\b|"
    r"'(?:s|re|m|ve|d)\b",
    re.IGNORECASE,
)
_YOU = re.compile(r"\b(?:you|u|ur|your|yuh|yu|ya|ye|yo|youse)\b", re.IGNORECASE)
#: Asked to be told about a topic: the topic is what they want to learn about, not a
#: hobby or a taste of theirs ("tell me about violin and gardening", "teach me a bit
#: about sourdough"; "recommend me songs like Chappell Roan" is not this).
_TELL_ABOUT = re.compile(
    r"^(?:tell|teach|talk\s+to|explain\s+to|fill)\s+(?:me|us|mi|meh)\s+(?:in\s+)?"
    r"(?:(?:a\s+)?(?:bit|little|lot|few\s+things|something|everything|all|more|some\s+\w+)\s+)?"
    r"(?:more\s+)?(?:about|on|of)\b",
    re.IGNORECASE,
)
_POLITE = re.compile(r"^(?:please|pls|plz|kindly|so|and|but|also)[\s,]+", re.IGNORECASE)


def _weak(text: str, alone: bool) -> bool:
    """A statement no rule read and ``_candidate`` passed over that may still be the
    person's own: not a question, not about someone else, not a request."""
    words = text.split()
    if len(words) < 3 or len(words) > 40:
        return False  # its sentence may end in a question ("Ah'm on a Fiat, whit tyres?")
    if _YOU.search(text):
        return False  # it speaks to the assistant ("Weh yuh tink nicer, Negril or ...")
    if alone and not _WRITER.search(text) and not _STATING.search(text):
        return False  # a message that is a search query ("cheap flights lisbon june")
    asked = _POLITE.sub("", text)
    return _OTHER_SUBJECT.match(asked) is None and _TELL_ABOUT.match(asked) is None


def parts_of(fact: Fact | None) -> list[Fact | None]:
    """A job said with its workplace as two facts (``compound``); None stays None."""
    return [fact] if fact is None else list(parts(fact))


#: The key prefix of the retraction a clause saying something ended makes (``ended``).
ENDED = "ended:"
#: What "I gave up X" still states after it retires X: a way of eating or living.
_KEPT_WHEN_ENDED = frozenset({"diet", "food_avoidance", "habit", "health_condition", "allergy"})


def ended_mention(fact: Fact, over: tuple[str, ...]) -> bool:
    """Whether ``fact`` only restates what ended: "quit ballet" keeps no hobby of
    ballet, "sold the pontoon" no boat; what they gave up is a habit or a diet of
    theirs now ("I quit caffeine", "given up the drink for Lent"), and what else the
    clause says stands ("ditched the samsung, on a pixel now")."""
    if fact.attribute in _KEPT_WHEN_ENDED:
        return False
    low = fact.content.lower()
    gone = [
        w for t in over if "~" in t and (w := t.partition("~")[2].lstrip("=").lower()) and w in low
    ]
    if not gone:
        return False
    # a single value the clause goes on to name replaces the old one ("ditched the
    # samsung, on a pixel 8 now"); "resigned from Mou Foods, no job currently" names none
    after = re.findall(r"[\w'-]+", low.split(gone[0], 1)[1])
    said = [w for w in after if w not in _FILLER]
    kind = by_name(fact.attribute or "")
    single = kind is not None and kind.single  # one value: a phone, not a like of rugby
    return not (single and len(said) >= 3 and said[0] not in ("no", "not", "nothing"))


_FILLER = frozenset(
    {"now", "anymore", "already", "too", "lol", "haha", "though", "yet", "just", "finally"}
    | {"completely", "currently"}
)


def _extract(
    found: list[Clause],
    source: str,
    facts: list[Fact],
    seen: set[str],
    leftovers: list[str],
    weak: list[str] | None = None,
) -> None:
    topic: Draft | None = None  # what the previous clause was about ("His name is Gizmo")
    before = ""
    for clause in found:
        withdrawn = retraction(clause.text, _match, before) if source == "user" else None
        over = None if withdrawn or source != "user" or clause.question else ended(clause.text)
        before = clause.text
        if withdrawn:
            key = "retract:" + slugify("|".join(withdrawn), 120)
            if key not in seen:
                seen.add(key)
                facts.append(Fact("retraction", "factual", key, "", source, retracts=withdrawn))
            topic = None
            continue
        drafts = _match(clause.text) or follow_up(clause.text, topic)
        if not drafts and clause.listed is not None:  # "Upcoming: dentist 4 Feb"
            listed = fallback(clause.listed, clause.item)
            drafts = [listed] if listed is not None else []
        text = clause.text
        late = None if drafts or clause.question else _LATE_FIRST.match(text)
        if late is not None and not _NOT_LATE.search(late[0]):  # the rules, from the speaker on
            text = text[late.end() :]
            drafts = _match(text)
        own = None if drafts or source != "user" else owned(text)
        if own is not None:  # "Mum is on home oxygen": the writer's mum
            text = own
            drafts = _match(text)
        topic = next(iter(drafts), None) or about(clause.text)
        read = [
            part
            for draft in drafts
            for part in parts_of(_fact(draft, source, own or clause.text, clause.still))
        ]
        if over:  # something of theirs ended: it is retired first
            key = ENDED + slugify("|".join(over), 120)
            if key not in seen:
                seen.add(key)
                facts.append(
                    Fact("retraction", "factual", key, "", source, retracts=over, clause=text)
                )
            read = [f for f in read if f is not None and not ended_mention(f, over)]
        # a rule that matched and then declined ("I got AF" is no possession) leaves the
        # clause to the classifier, as if no rule had read it
        if not any(read) and source == "user":
            if _candidate(text, clause.question):
                leftovers.append(text)
            elif weak is not None and _weak(text, len(found) == 1):
                weak.append(text)
        for fact in read:
            if fact is not None and fact.key not in seen:
                seen.add(fact.key)
                facts.append(fact)


#: What a standing request may be filed as: an instruction, or the name to use.
_ANSWERING = frozenset((*INSTRUCTIONS, "ui_theme", "preferred_name", "name", "pronouns"))
_WHOLE = re.compile(r"(?P<v>.+)", re.DOTALL)


def _standing(text: str, facts: list[Fact], seen: set[str]) -> None:
    """Requests about how to answer the person from now on, in the sentences no rule
    read as one (``standing``): the rule table on the request's words first ("call me
    Bazza from now on"), else one instruction in their words."""
    covered = [f.clause for f in facts if f.attribute in _ANSWERING and f.clause]
    pieces = []
    for sentence, _end in sentences(text):
        lasting = stands(sentence)
        parts = AND_THEN.split(sentence)  # "keep it short and use bullet points"
        pieces += [(part, lasting) for part in (parts if len(parts) > 1 else [sentence])]
    for sentence, lasting in pieces:
        if any(c in sentence for c in covered):
            continue
        for fact in _standing_facts(sentence, lasting):
            if fact.key not in seen:
                seen.add(fact.key)
                facts.append(fact)


def _standing_facts(sentence: str, lasting: bool) -> list[Fact]:
    found = directive(sentence, lasting)
    if found is None:
        return []
    words, less = found
    made = [f for d in ([] if less else _match(words)) if (f := _fact(d, "user", sentence))]
    made = [f for f in made if f.attribute in _ANSWERING]
    if not made:
        value = f"not {words}" if less else words
        drafts = instruction(_WHOLE.match(value), value) or _request_draft(value)  # type: ignore[arg-type]
        made = [f for d in drafts if (f := _fact(d, "user", sentence))]
    return made


_OPENER = re.compile(
    r"^(?:(?:and|also|oh|ok|okay|so|but|btw|hey|hi|yeah|please|pls|plz|kindly|one\s+(?:more\s+)?"
    r"(?:thing|request)|quick\s+(?:one|thing)|just|do)\b[\s,:;.!\u2014\u2013-]*)+",
    re.IGNORECASE,
)


def requested(sentence: str) -> list[Fact]:
    """A sentence a model read as a standing request about how to answer its writer,
    as facts: the rules' reading of the request when they have one ("call me Bazza"),
    else one instruction in the writer's own words. Never another kind of fact."""
    if hypothetical(sentence):  # "imagine I was a beginner"
        return []
    if one_off(sentence) and not about_answering(sentence):  # "can you punch it up a bit"
        return []
    made = [f for f in _standing_facts(sentence, stands(sentence)) if f.attribute in _ANSWERING]
    if made:
        return made
    words = _OPENER.sub("", sentence.strip()).strip()
    return [f for d in _request_draft(words) if (f := _fact(d, "user", sentence))]


def _request_draft(words: str) -> list[Draft]:
    """A standing request not worded as an order ("your future responses kept to one
    paragraph"), in its own words, the person and the assistant named."""
    own = re.sub(r"\byour\b", "the assistant's", words, flags=re.IGNORECASE)
    own = re.sub(r"\byou\b", "the assistant", own, flags=re.IGNORECASE)
    text = pronouns(own.strip(" ,.;:!?"))
    if len(text) < 6:
        return []
    return [Draft("instructions", f"instruction:{slugify(words)}", words, f"User asked: {text}")]


def _match(clause: str) -> list[Draft]:
    # the blocks' alternations say "no rule here" as fast as the whole table's would,
    # and a clause that some rule matches pays for one look, not two
    for block, rules in block_rules():
        if block is not None and block.match(clause) is None:
            continue
        for _kind, pattern, build in rules:
            m = pattern.match(clause)
            if m is None:
                continue
            drafts = build(m, clause)
            if drafts:
                return drafts
    return []


def fact_metadata(fact: Fact, extracted_at: str) -> dict[str, Any]:
    """The metadata stored with an extracted memory (camelCase, as on the wire), with
    who it is about: the user, and the people it names by relation (``core.subjects``)."""
    meta: dict[str, Any] = {
        "category": fact.category,
        "extractedAt": extracted_at,
        "source": fact.source,
        "subjects": subjects_of_fact(fact.content),
    }
    if fact.slot:
        meta["slot"] = fact.slot
    if fact.attribute:
        meta["attribute"] = fact.attribute
    if fact.careful:  # the profile carries it (``storage.rows.pinned_of``)
        meta["careful"] = True
    return meta

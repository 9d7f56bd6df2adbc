"""The profile: what every request of an owner carries, whatever it asks.

Relevance-gated retrieval brings a memory back when the question shares its words or
meaning; a standing instruction ("keep answers short") or a constraint ("my partner
has a nut allergy") must shape answers that share neither. The profile is the few
memories that always do: the person's standing instructions, how to address them,
their role, and the health and dietary constraints a careful assistant would not
advise around, plus anything they pin. Advice questions add the attributes their
topic bears on ("ideas for my kid's weekend" -> the children; "plan a trip" -> pets,
family, health). Attributes are capture's schema (``core.extraction.attributes``).
Pure: the engine reads the rows, this decides order and budget.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = [
    "CIRCUMSTANCE",
    "CONSTRAINTS",
    "HOUSEHOLD",
    "IDENTITY",
    "INSTRUCTIONS",
    "PROFILE",
    "PROFILE_TOKENS",
    "TOPICS",
    "fit",
    "rank",
    "topics",
]

T = TypeVar("T")

#: How the person wants to be answered: every question is answered some way.
INSTRUCTIONS = (
    "answer_language",
    "answer_length",
    "answer_format",
    "tone",
    "units",
    "instruction",
)
#: Who they are to the conversation: the name to use, pronouns, their role (the
#: expertise an answer assumes), and what they say they are ("a freelance designer",
#: "Hindu", "a night owl": capture files roles it does not know as identity).
IDENTITY = ("preferred_name", "name", "pronouns", "job_title", "identity")
#: What no advice may ignore: allergies, diet, conditions and injuries, medication, and
#: what the law says the person may do (a visa, a tag and curfew, a court order): it
#: bears on a trip, a job or a photo of the children, asked in words no topic knows.
CONSTRAINTS = (
    "allergy",
    "diet",
    "food_avoidance",
    "health_condition",
    "medication",
    "legal_status",
    "circumstance",
)
#: What capture's careful reader files a constraint under when no other attribute
#: names it (a notice period, a partner's night shifts, a carer's role).
CIRCUMSTANCE = "circumstance"
#: Every always-on attribute, in the order the budget keeps them.
PROFILE = INSTRUCTIONS + IDENTITY + CONSTRAINTS
#: Attributes of other people in the person's life: always read, carried when the
#: question's topic bears on them or when they state a constraint of their own ("my
#: partner has a nut allergy", "my daughter has coeliac disease").
HOUSEHOLD = ("family_member", "partner")
#: The profile's default budget (``profileMaxTokens``; 0 turns the profile off).
PROFILE_TOKENS = 150


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    cue: re.Pattern[str]
    attributes: tuple[str, ...]


def _cue(*words: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)


#: Advice topics: the words that name one, and the attributes beyond the profile that
#: bear on its answer (the profile's constraints are always there).
TOPICS: tuple[Topic, ...] = (
    # Advice of any kind depends on whom it is for: the household, children and their
    # ages, a partner, the animals that come along.
    Topic(
        "advice",
        _cue(
            r"should\s+(?:i|we)",
            r"shall\s+(?:i|we)",
            r"how\s+(?:do|can|should|would|could)\s+(?:i|we)",
            r"how\s+(?:to|much|many|long|often)",
            r"what(?:'s|\s+is|\s+are)?\s+(?:the\s+)?(?:best|a\s+good|some\s+good|good)",
            r"(?:any|some)\s+(?:ideas?|tips?|suggestions?|advice|recommendations?|thoughts)",
            r"what(?:'s|\s+is|\s+are)?\s+(?:some|a\s+few)",
            r"ideas?\s+for",
            r"tips?",
            r"recommend\w*",
            r"suggest\w*",
            r"advi[cs]e",
            r"plan\w*",
            r"help\s+me",
            r"best",
            r"good\s+way",
            r"worth",
            r"which\s+(?:one|is\s+better)",
            r"where\s+(?:to|should)",
            r"what\s+(?:to|should)",
            r"fancy",
            r"thinking\s+(?:of|about)",
        ),
        # and on what the person may do: their age, whether they work (a job lost, a
        # zero-hours contract: money and childcare advice), whether they drink or smoke
        (
            "family_member",
            "partner",
            "relationship_status",
            "pet",
            "living_situation",
            "age",
            "employment_status",
            "habit",
        ),
    ),
    # a question about someone else of the household: "how do I talk to her about it?"
    Topic(
        "people",
        _cue(
            "she",
            "he",
            "her",
            "him",
            "his",
            r"kids?",
            "children",
            r"sons?",
            r"daughters?",
            r"bab(?:y|ies)",
            r"toddlers?",
            r"teens?",
            "family",
            "wife",
            "husband",
            "partner",
            "mum",
            "mom",
            "dad",
            r"grandkids",
            r"grandchildren",
            r"twins",
        ),
        ("family_member", "partner", "relationship_status"),
    ),
    Topic(
        "travel",
        _cue(
            r"trips?",
            r"travel\w*",
            r"holidays?",
            r"vacations?",
            r"flights?",
            r"fly(?:ing)?",
            r"hotels?",
            r"itinerar\w+",
            r"pack(?:ing)?",
            r"destinations?",
            "abroad",
            r"road ?trip",
            r"cruises?",
            r"airports?",
            r"getaway",
            r"weekend away",
            r"backpack\w*",
            r"hostels?",
            r"airbnb",
            r"visa",
            r"tours?",
            r"sightseeing",
            r"camping",
            r"staycation",
            r"honeymoon",
        ),
        ("home", "vehicle", "age"),
    ),
    Topic(
        "work",
        _cue(
            r"jobs?",
            r"careers?",
            r"resume",
            r"cv",
            r"interviews?",
            r"salary",
            r"promotion",
            r"boss",
            r"manager",
            r"colleagues?",
            r"cowork\w+",
            r"meetings?",
            r"clients?",
            r"negotiat\w+",
            r"linkedin",
            r"pitch",
            r"presentations?",
            r"workplace",
            r"office",
            r"deadlines?",
            r"hiring",
            r"freelanc\w+",
            r"invoices?",
            r"tax\w*",
            r"business",
            r"startup",
            r"team",
            r"stand-?ups?",
            r"performance review",
            r"upskill\w*",
            r"certification",
            r"retire\w*",
            r"pensions?",
            r"savings?",
            r"invest\w*",
            r"mortgage",
            r"budget\w*",
            r"loans?",
            r"lease",
            r"vat",
            r"super",
            r"courses?",
            r"stud(?:y|ying)",
            r"degree",
            r"mba",
            r"masters",
            r"internships?",
            r"work\s+experience",
            r"earn\w*",
            r"income",
            r"side\s+(?:hustle|gig|job|income)",
            r"wages?",
            r"pay\s*rise",
            r"shifts?",
            r"staff",
            r"employees?",
            r"apprentices?",
            r"recruit\w*",
            r"(?:paid|annual|sick|parental|maternity|paternity)\s+leave",
            r"time\s+off",
            r"paid",
            r"got\s+(?:an?\s+)?offer",
            r"offered",
            r"volunteer\w*",
        ),
        # the school too: what someone studies bears on a CV or a career question
        ("employer", "work", "employment_status", "education", "field_of_study", "school"),
    ),
    # sleep answers to the hours someone works
    Topic(
        "sleep",
        _cue(r"sleep\w*", "insomnia", r"jet\s*lag\w*", r"body\s+clock", "naps?"),
        ("employer", "employment_status", "work", "routine"),
    ),
)


def topics(query: str) -> list[Topic]:
    """The advice topics a question names."""
    return [t for t in TOPICS if t.cue.search(query)] if query else []


def rank(
    items: Sequence[T],
    attribute: Callable[[T], str | None],
    pinned: Callable[[T], bool],
    extra: Sequence[str] = (),
) -> list[T]:
    """Pinned first (the person asked for them), then the profile's attributes in
    ``PROFILE`` order, then a topic's ``extra`` ones; newest first within each (the
    caller gives them newest first, and the sort is stable)."""
    order = {name: i for i, name in enumerate((*PROFILE, *extra))}
    last = len(order)

    def key(item: T) -> int:
        if pinned(item):
            return -1
        return order.get(attribute(item) or "", last)

    return sorted(items, key=key)


def fit(items: Sequence[T], budget: int, tokens: Callable[[T], int]) -> tuple[list[T], list[T]]:
    """Keep items in order while they fit; one that does not is dropped (and said so),
    and a smaller one after it may still fit."""
    kept: list[T] = []
    dropped: list[T] = []
    used = 0
    for item in items:
        cost = tokens(item)
        if used + cost <= budget:
            kept.append(item)
            used += cost
        else:
            dropped.append(item)
    return kept, dropped

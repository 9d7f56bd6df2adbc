"""The attribute schema: what a captured fact is about, by meaning.

Every fact names one attribute of the person: their employer, their home, their diet.
An attribute holds one current value (``single``: a new employer retires the old one,
whatever words either statement used) or many (allergies, hobbies, pets). The rules
name a slot as they match; ``attribute_of`` reads the slot's attribute, and ``refine``
moves a fact whose words say it belongs elsewhere ("started at HSBC last week" matched
as something begun, is an employer; "got an iPhone" beside "I use Android" is the
phone). The same names are the slots the LLM extraction writes (``core.llm_ops``), so
both modes reconcile alike. Pure and stdlib-only.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = [
    "ALIASES",
    "ATTRIBUTES",
    "Attribute",
    "attribute_of",
    "by_name",
    "refine",
    "units_slot",
]


@dataclass(frozen=True, slots=True)
class Attribute:
    """One attribute: ``slot`` is where its single value is stored (the name the store
    has always used, so older memories reconcile with newer ones); ``prefixes`` are
    the rule slots it covers."""

    name: str
    single: bool
    about: str
    slot: str = ""
    prefixes: tuple[str, ...] = ()

    @property
    def storage_slot(self) -> str:
        return self.slot or self.name


def _a(name: str, single: bool, about: str, slot: str = "", *prefixes: str) -> Attribute:
    return Attribute(name, single, about, slot, prefixes)


#: The schema (docs/EXTRACTION.md lists it). Single attributes first, in the order a
#: profile would show them.
ATTRIBUTES: tuple[Attribute, ...] = (
    _a("name", True, "the user's own name", "name"),
    _a("preferred_name", True, "what they want to be called", "preferred_name", "nickname"),
    _a("pronouns", True, "their pronouns", "pronouns"),
    _a("age", True, "their age", "age"),
    _a("birthday", True, "their birthday", "birthday"),
    _a("home", True, "the city or country they live in now", "home_location", "former_home"),
    _a("living_situation", True, "who they live with", "living_situation", "home_type"),
    _a("hometown", True, "where they grew up or were born", "hometown", "birthplace"),
    _a("employer", True, "the organisation they work for now", "employer"),
    _a("job_title", True, "their current role or occupation", "occupation", "side_job"),
    _a(
        "employment_status",
        True,
        "retired, freelancing, between jobs, on leave",
        "employment_status",
        "work_pattern",
    ),
    _a("school", True, "the school or university they attend now", "school", "student"),
    _a("field_of_study", True, "what they study now", "education:current"),
    _a("relationship_status", True, "single, married, engaged, dating", "relationship_status"),
    _a("partner", True, "their partner or spouse", "family:partner"),
    _a("diet", True, "their eating pattern: vegetarian, vegan, keto, eats meat", "diet"),
    _a("native_language", True, "their first language", "native_language"),
    _a("phone", True, "their phone, model or platform", "phone"),
    _a("computer", True, "their main computer", "computer", "laptop"),  # one machine
    _a("os", True, "their computer's operating system", "tool:os"),
    _a("editor", True, "their code editor or IDE", "tool:editor"),
    _a("vehicle", True, "the vehicle they drive or ride", "vehicle", "car"),
    _a("ui_theme", True, "dark or light mode", "instruction:theme"),
    _a("answer_language", True, "the language answers should be in", "instruction:language"),
    _a("answer_length", True, "short or detailed answers", "instruction:length"),
    _a("answer_format", True, "bullets, tables, plain text", "instruction:format"),
    _a(
        "units",
        True,
        "metric or imperial, currency, date format (one per dimension)",
        "instruction:units",
        "instruction:units",
        "timezone",
    ),
    _a("tone", True, "formal or casual, emojis or not", "instruction:tone"),
    # many values at a time
    _a(
        "identity",
        False,
        "nationality, religion, traits",
        "",
        "identity",
        "trait",
        "gender",
        "nationality",
    ),
    _a("past_employer", False, "former employers and jobs", "", "past_employer", "past_occupation"),
    _a("work", False, "team, industry, business they run", "", "team", "industry", "business"),
    _a("education", False, "degrees and finished studies", "", "education"),
    _a("family_member", False, "children, parents, siblings", "", "family"),
    _a("pet", False, "animals they keep", "", "pet"),
    _a("food_avoidance", False, "foods they avoid, cut or stick to", "", "diet"),
    _a("allergy", False, "allergies and intolerances", "", "allergy"),
    _a("medication", False, "medicines and doses", "", "health:medication"),
    _a("health_condition", False, "illnesses, injuries, pregnancy", "", "health"),
    _a("habit", False, "smoking, drinking, and quitting them", "", "habit"),
    _a(
        "legal_status",
        False,
        "visas, permits, passport, a record, parole, court orders, a non-compete",
        "",
        "legal",
    ),
    _a(
        "circumstance",
        False,
        "what else advice must weigh: shift work, a contract, caring for someone",
        "",
        "circumstance",
    ),
    _a("language_spoken", False, "languages they speak", "", "language"),
    _a("language_learning", False, "languages they are learning", "", "learning"),
    _a("tool", False, "languages, frameworks, apps they use", "", "tool", "primary"),
    _a("possession", False, "other things they own", "", "owns", "tablet"),
    _a("instruction", False, "other standing instructions", "", "instruction"),
    _a("plan", False, "plans, trips, events, goals", "", "plan", "decision"),
    _a("hobby", False, "hobbies and activities", "", "hobbies", "past"),
    _a("routine", False, "routines and schedules", "", "routines", "pattern"),
    _a(
        "like",
        False,
        "likes, dislikes, favourites, preferences",
        "",
        "opinion",
        "favorite",
        "preference",
    ),
)

_BY_NAME = {a.name: a for a in ATTRIBUTES}
#: a single attribute's own slot is matched exactly ("diet", not "diet:avoid:sugar")
_EXACT = {a.slot: a for a in ATTRIBUTES if a.slot}
# the longest prefix wins: "health:medication" before "health"
_PREFIXES = sorted(
    ((p, a) for a in ATTRIBUTES for p in a.prefixes), key=lambda pa: len(pa[0]), reverse=True
)


#: Rule slots that are another name for a single attribute's own slot: a fact there is
#: stored under the attribute's slot and also retires memories an older version filed
#: under the alias.
ALIASES: dict[str, str] = {
    "laptop": "computer",
    "car": "vehicle",
    "nickname": "preferred_name",
    "student": "school",
}


def by_name(name: str) -> Attribute | None:
    return _BY_NAME.get(name)


@functools.lru_cache(maxsize=1 << 12)
def attribute_of(slot: str | None) -> Attribute | None:
    """The attribute a stored or rule slot belongs to (None: not in the schema)."""
    if not slot:
        return None
    exact = _EXACT.get(slot)
    if exact is not None:
        return exact
    for prefix, attribute in _PREFIXES:
        if slot == prefix or slot.startswith(prefix + ":"):
            return attribute
    return None


# -- meaning over the rule that fired ------------------------------------------------------

_COMPANY_CUE = re.compile(
    r"\b(?:new\s+job|new\s+role|new\s+position|joined|hired|employed|job\s+at|job\s+with|"
    r"(?:started|starting|begun|began)\s+(?:at|with|work\s+at|working\s+(?:at|for))|"
    r"work(?:s|ing)?\s+(?:at|for)|offer\s+from|pays\s+my\s+bills|onboarding)\b",
    re.IGNORECASE,
)
_AT_ORG_NOW = re.compile(
    r"^I\s+am\s+(?:at|with)\s+(?P<org>(?-i:[A-Z][\w&.'-]*(?:\s+(?-i:[A-Z][\w&.'-]*)){0,2}))"
    r"\s+(?:now|these\s+days|nowadays)\b",
    re.IGNORECASE,
)
_PHONE = re.compile(
    r"\b(?:iphone|android|pixel|galaxy\s+s?\d*|samsung\s+(?:galaxy|phone)|oneplus|xiaomi|"
    r"redmi|huawei|motorola|nokia\s+phone|android\s+phone|smartphone|flip\s+phone)\b",
    re.IGNORECASE,
)
_THEME = re.compile(r"\b(?:dark|light|night)\s+(?:mode|theme)\b", re.IGNORECASE)
_FORMAT = re.compile(
    r"\b(?:bullet(?:ed)?(?:\s+points?|\s+lists?)?|bullets|numbered\s+lists?|tables?|markdown|"
    r"plain\s+text|prose|paragraphs?|headings|code\s+only|step[- ]by[- ]step|tl;?dr)\b",
    re.IGNORECASE,
)
_LENGTH = re.compile(
    r"\b(?:short(?:er)?|brief(?:er)?|concise|succinct|terse|to\s+the\s+point|"
    r"(?:more|less|much|heaps\s+more|lots\s+more|full|in)\s+detail|detailed|in[- ]depth|"
    r"long(?:er)?\s+(?:answers|replies|responses|version|explanations)|the\s+long\s+version|"
    r"verbose|thorough|comprehensive|water\s+it\s+down|one[- ]liners?|tl;?dr)\b",
    re.IGNORECASE,
)
_UNITS = re.compile(
    r"\b(?:metric|imperial|celsius|fahrenheit|kilos?|kilograms?|stones?|pounds|kg|lbs?|miles|"
    r"km|kilomet(?:er|re)s|litres|liters|gallons|feet|inches|cm|24[- ]hour|12[- ]hour|"
    r"dd/mm|mm/dd|yyyy|currency|rupees|euros|dollars|nzd|aud|cad|usd|gbp|inr)\b",
    re.IGNORECASE,
)
_ANSWERS = re.compile(r"\b(?:answers?|replies|responses|explanations|output|format)\b", re.I)
_ADDRESS_ME = re.compile(
    r"^(?:please\s+)?(?:address|call|refer\s+to)\s+me\s+(?:as\s+)?(?-i:[A-Z])", re.IGNORECASE
)
_ADDRESSED = re.compile(
    r"\b(?:to\s+be|being)\s+(?:addressed|called|known)\s+as\s+(?-i:[A-Z])", re.IGNORECASE
)
_DIMENSIONS = (
    ("temperature", re.compile(r"\b(?:celsius|fahrenheit|centigrade|°[cf])\b", re.I)),
    (
        "distance",
        re.compile(r"\b(?:miles|km|kilomet(?:er|re)s|feet|inches|cm|metres|meters)\b", re.I),
    ),
    ("weight", re.compile(r"\b(?:kilos?|kilograms?|kg|stones?|pounds|lbs?|grams)\b", re.I)),
    ("time", re.compile(r"\b(?:24[- ]hour|12[- ]hour|am/pm)\b", re.I)),
    ("date", re.compile(r"\b(?:dd/mm|mm/dd|yyyy|dates?)\b", re.I)),
    ("volume", re.compile(r"\b(?:litres|liters|gallons|cups|ml)\b", re.I)),
    (
        "currency",
        re.compile(
            r"\b(?:currency|rupees|euros|dollars|pounds\s+sterling|yen|inr|usd|eur|gbp|nzd|aud|"
            r"cad|prices?\s+in)\b",
            re.I,
        ),
    ),
)


UNIT_SYSTEM = re.compile(r"\b(?:metric|imperial|si\s+units)\b", re.IGNORECASE)
#: the dimensions a system of measurement decides (a currency or a date format it does not)
SYSTEM_DIMENSIONS = tuple(
    f"instruction:units:{name}" for name in ("temperature", "distance", "weight", "volume")
)


def units_slot(text: str) -> str:
    """Units are one value per dimension: Celsius and km are both current; miles
    replaces km. "metric"/"imperial" name the whole system, whatever units they list
    ("metric again, kilogram and centimetre"), and retire every dimension's value."""
    if UNIT_SYSTEM.search(text):
        return "instruction:units"
    for name, pattern in _DIMENSIONS:
        if pattern.search(text):
            return f"instruction:units:{name}"
    return "instruction:units"


_TONE = re.compile(
    r"\b(?:formal|informal|casual|friendly|blunt|polite|emojis?|sarcas\w*|jokes?|"
    r"professional\s+tone|tone)\b",
    re.IGNORECASE,
)
_MEAT = re.compile(
    r"\b(?:(?:eat(?:ing)?|back\s+(?:on|to))\s+(?:meat|chicken|fish|beef)(?:\s+again)?|"
    r"(?:no\s+longer|not)\s+(?:a\s+)?(?:vegetarian|vegan|pescatarian)|"
    r"gave\s+up\s+(?:being\s+)?(?:vegetarian|vegan|veganism|vegetarianism))\b",
    re.IGNORECASE,
)


def refine(slot: str, single: bool, clause: str, value: str) -> tuple[str, bool] | None:
    """The slot a fact belongs in when its words say so and the rule that matched it
    put it elsewhere, or None to keep the rule's. Only moves into single attributes:
    that is where a wrong slot leaves an old value current."""
    attribute = attribute_of(slot)
    name = attribute.name if attribute else ""
    if name == "employer":
        return None
    generic = name in ("hobby", "plan", "identity", "routine", "like", "school", "work", "")
    device = name in ("tool", "possession", "os", "computer") or generic
    if device and (_PHONE.search(value) or (name in ("possession", "") and _PHONE.search(clause))):
        return "phone", True
    if (_THEME.search(clause) and name in ("like", "instruction", "tool", "")) or (
        _THEME.search(value)
    ):
        return "instruction:theme", True
    if name == "like" and _FORMAT.search(clause) and _ANSWERS.search(clause):
        return "instruction:format", True  # "I like answers as tables"
    if name == "instruction" and _ADDRESS_ME.match(value):  # "address me as Arindam"
        return "preferred_name", True
    if name in ("like", "instruction", "") and _ADDRESSED.search(clause):
        return "preferred_name", True  # "I prefer to be addressed as Professor Lindqvist"
    if name == "instruction" and _UNITS.search(value):
        return units_slot(value), True
    if name == "instruction":
        if _LENGTH.search(value):
            return "instruction:length", True
        if _FORMAT.search(value):
            return "instruction:format", True
        if _TONE.search(value):
            return "instruction:tone", True
    at_org = _AT_ORG_NOW.match(clause)
    if generic and (at_org or (_COMPANY_CUE.search(clause) and re.search(r"(?-i:[A-Z])", value))):
        return "employer", True
    if (
        name in ("food_avoidance", "like", "plan", "hobby", "")
        and _MEAT.search(clause)
        and not re.search(r"\b(?:not|never|no)\s+(?:\w+\s+)?eat", clause, re.IGNORECASE)
    ):
        return "diet", True
    return None

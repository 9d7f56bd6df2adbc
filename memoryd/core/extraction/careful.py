"""Constraints advice must not ignore, by their words: an allergy, a health
condition or injury, a medication, a strict diet, a legal status (a visa, a record), a
child's age or a relative's condition. Capture
keeps a statement of one even when the attribute classifier is unsure, and a terse
fragment of one ("T1D since age 12.", "Kids 2 and 3.") that names no person at all, and
one of a relative named bare ("Mum's on home oxygen"): a missed allergy costs more than
a stored aside. The cues are what keep questions and
chatter out; a hedge ("I wonder if I'm allergic") is never a constraint. Pure.
"""

from __future__ import annotations

import re

__all__ = ["CUES", "careful", "fragment", "owned", "unsure"]

_HEALTH = (
    r"diabet|asthma|epilep|injur|surgery|operation|syndrome|disorder|disease|\w{3,}itis\b|"
    r"\w{3,}osis\b|\w{3,}pathy\b|phobi|claustro|(?:terrified|scared|frightened|afraid)\s+of|"
    r"fear\s+of|seasick|"
    r"travel\s*sick|motion\s+sick|sickness|vertigo|wheelchair|pregnan|weeks\s+along|gave\s+birth|"
    r"post-?partum|c-?section|caesarean|blood\s+thinners?|a-?fib\b|atrial|premature|preemie|"
    r"nicu\b|(?:born|came|arrived)\s+(?:at|@)\s+\d+\s*(?:weeks|wks)|\bdvt\b|clot|chronic|"
    r"arthrit|cancer|"
    r"chemo|migraine|adhd|autis|deaf|blind|disab|fractur|torn|sprain|\bacl\b|menisc|hernia|"
    r"heart\s+(?:condition|attack|problem)|blood\s+pressure|cholesterol|\bibs\b|crohn|dislocat|"
    r"hypermobil|bad\s+(?:back|knee|hip|shoulder|ankle)|stroke|swallow|oxygen|transplant|ptsd|"
    r"anorexi|bulimi|eating\s+disorder|\bsober\b|in\s+recovery|\bpku\b|t[12]d\b|type\s+[12]\b|"
    r"apn(?:o)?ea|cpap|\bivf\b|egg\s+collection|embryo|miscarri|ehlers|\bh?eds\b|bppv|stoma\b|"
    r"\w+ostomy|stammer|stutter|panic\s+attack|terrif(?:ies|ied)|corrected\s+age|concuss|"
    r"dengue|malaria|platelet|\bi\s*'?a?m\s+\d+\s*(?:weeks|wks)(?=\s+(?:now|along|gone|"
    r"today|pregnant)\b|\s*[,.!]|\s*$)|dementia|alzheim|parkinson|frail|copd|emphysema|"
    r"slip(?:ped)?\s+disc|sciatica|seizure|"
    r"kidney|liver|pacemaker|stent|bypass|"
    r"mobility|crutches|hearing\s+aid|implants?\b|\b(?:had|got)\s+(?:my|me|his|her)\s+\w+\s+"
    r"(?:out|removed|replaced)"
)
_MEDICATION = (
    r"tablets|pills|medication|medicine|\bmeds\b|insulin|inhaler|thinners?|injection|immuno\w*|"
    r"\b(?:doctor|doc|dr|gp|consultant|specialist|cardiologist)\s+(?:has\s+)?(?:put|started)\s+"
    r"(?:me|him|her|them)\s+on\b|"
    r"methadone|antidepressants?|steroids?|prescri\w+|epi-?pen"
)
_ALLERGY = r"allerg|intoleran|anaphyla|epi-?pen|coeliac|celiac"
_DIET = (
    r"vegetarian|\bvegan|halal|kosher|pescatarian|gluten[- ]free|dairy[- ]free|lactose|"
    r"(?:never|doesn'?t|does\s+not|don'?t|won'?t|can'?t|cannot)\s+(?:eat|touch|have)\s+"
    r"(?:any\s+)?(?:meat|pork|beef|fish|dairy|eggs|gluten|nuts|shellfish)|low[- ]salt|"
    r"salt\s+(?:right\s+)?down|no[- ]salt"
)
_KIN = (
    r"\b(?:sons?|daughters?|kids?|child(?:ren)?|bab(?:y|ies)|bub|toddlers?|twins|triplets|lad|"
    r"foster\w*|"
    r"girls|boys|little\s+one|wee\s+one|eldest|youngest|step\w+|mum|mom|mam|dad|father|mother|"
    r"grandma|granny|nana|nanna|"
    r"grandmother|grandad|grandpa|grandfather|nan|gran|brother|sister|wife|husband|partner|"
    r"fianc[eé]e?|bestie|in-laws?)\b"
)
#: who else eats at the person's table: their diet is a constraint on the person's cooking
_HOUSEHOLD = (
    r"\b(?:room-?mates?|flat-?mates?|house-?mates?|lodgers?|guests?|girlfriend|boyfriend|"
    r"in-laws?|\w+-in-law)\b"
)
#: What a border, an employer or a school must be told: a visa or permit, a passport, a
#: record, parole, a protective order ("fled abusive ex, new address is secret")
_LEGAL = (
    r"\bvisas?\b(?!\s+(?:card|debit|credit|gift|signature|platinum))|passport|green\s+card|"
    r"blue\s+card|h-?1b|residence\s+permit|work\s+permit|right\s+to\s+work|permanent\s+resid|"
    r"citizenship|asylum|refugee|undocumented|immigration|deport|convict|criminal\s+record|"
    r"\bdbs\b|parole|probation|on\s+bail|restraining\s+order|protection\s+order|"
    r"\bdui\b|\bdwi\b|drink[- ]driv|curfew|on\s+(?:a|an\s+electronic)\s+tag\b|court\s+order|"
    r"custody|referral\s+order|youth\s+offend|prison|\bjail|served\s+time|inside\s+for\b|"
    r"banned\s+from\s+driving|licen[cs]e\s+(?:suspended|revoked)|parenting\s+orders?|"
    r"non-?compete|notice\s+period|scholarship\s+bond|workers'?\s+comp|workcover|"
    r"non-?molestation|abusive|domestic\s+(?:violence|abuse)|\bfled\b|witness\s+protection|"
    r"address\s+is\s+(?:secret|confidential|hidden)"
)
_AGE = r"\b(?:\d+|one|two|three|four|five|six|months?|years?|yrs|yo|old|turned|teen\w*)\b"

#: Each careful attribute and the words that say a statement is one.
CUES: dict[str, re.Pattern[str]] = {
    "allergy": re.compile(_ALLERGY, re.I),
    "food_avoidance": re.compile(_DIET, re.I),
    "medication": re.compile(_MEDICATION, re.I),
    "health_condition": re.compile(_HEALTH, re.I),
    "legal_status": re.compile(_LEGAL, re.I),
    "family_member": re.compile(
        rf"{_KIN}.*(?:{_AGE}|{_HEALTH}|{_ALLERGY}|{_DIET})|(?:{_AGE}|{_HEALTH}|{_DIET}).*{_KIN}|"
        rf"{_HOUSEHOLD}.*(?:{_DIET}|{_ALLERGY})|\bfoster(?:ing|ed|\s+(?:child|kid|placement|"
        r"carers?|parents?|son|daughter|boy|girl))\b",
        re.I,
    ),
}
_HEDGE = re.compile(
    r"\b(?:wonder\w*|whether|maybe|might|perhaps|possibly|suspect|not\s+sure|think\s+I|"
    r"(?:know|ask\w*|check|see|unsure)\s+if|"
    r"could\s+be|probably)\b",
    re.I,
)
#: Someone else's: a character, a story, what another person said.
_NOT_MINE = re.compile(
    r"\b(?:my|our|his|her|the)\s+(?:character|oc|hero|heroine|protagonist|npc|villain)\b|"
    r"\bin\s+(?:the|my|our)\s+(?:story|novel|game|campaign|book|script)\b|"
    r"^(?:told|said|says|asked|claims?|announced|reckons?|thinks?|keeps)\b",
    re.I,
)
#: A fragment short enough to be a note about oneself, not a sentence about anything.
_FRAGMENT_WORDS = 8


def careful(clause: str, attribute: str | None = None) -> str | None:
    """The careful attribute ``clause`` states (``attribute``'s own when its cue matches,
    else the first whose cue does: allergy, medication, condition, family), or None;
    never for a hedge."""
    if _HEDGE.search(clause) or _NOT_MINE.search(clause):
        return None
    if attribute in CUES and CUES[attribute].search(clause):
        return attribute
    if attribute == "family_member":
        return None  # a relative's statement without an age or a condition: not careful
    for name, cue in CUES.items():
        if name != "family_member" and cue.search(clause):
            return name
    # the writer's household with an age or a condition, whatever the classifier read:
    # "We've just taken on our first foster placement, a lad of 9"
    if _WE.search(clause) and CUES["family_member"].search(clause):
        return "family_member"
    return None


def unsure(clause: str) -> bool:
    """A hedge or someone else's (a character, a story, what another said)."""
    return _HEDGE.search(clause) is not None or _NOT_MINE.search(clause) is not None


_WE = re.compile(r"\b(?:my|our|we|we've|we're|i|i've|i'm|im)\b", re.I)


def fragment(clause: str) -> bool:
    """A terse note of a constraint with no "I" in it: "T1D since age 12", "Kids 2 and
    3", "Afraid of heights", "Son, 16"."""
    words = clause.split()
    if _NOT_MINE.search(clause) or ":" in clause:  # a labelled list is read as a list
        return False
    return (1 < len(words) <= _FRAGMENT_WORDS and careful(clause) is not None) or (
        1 < len(words) <= 4 and CUES["family_member"].search(clause) is not None
    )


#: A relative or an animal named with no "my", as people name their own: "Mum lives with
#: us", "Dad's been told to cut his salt", "the wife is coeliac", "cat is 14 and diabetic".
_BARE_KIN = re.compile(
    r"^(?:the\s+)?(?:mum|mom|mam|mummy|mommy|dad|daddy|ma|pa|nan|nana|nanna|gran|granny|"
    r"grandma|grandad|granddad|grandpa|amma|appa|hubby|wifey|missus|wife|husband|kids|son|"
    r"daughter|eldest|youngest|bub|baby|twins|triplets|girls|boys|wee\s+one|little\s+one|cat|"
    r"dog|pup|puppy|kitten|moggy|pooch|doggo)(?:'s)?\s+(?!and\b|or\b|&)",
    re.I,
)
#: "2 kids, 18 months and 4", "Three boys under 10": how many, with no "I have"
_COUNTED_KIN = re.compile(
    r"^(?:\d+|two|three|four|five|six)\s+(?:kids|children|boys|girls|sons|daughters)\b", re.I
)


def owned(clause: str) -> str | None:
    """``clause`` in the writer's own words when it names their relative or animal bare
    and states a constraint of theirs ("Mum is on home oxygen" is "my Mum is on home
    oxygen"), else None: only a constraint, so a story's "Dad walked in" stays out."""
    if _NOT_MINE.search(clause) or _HEDGE.search(clause):
        return None
    if _COUNTED_KIN.match(clause):
        return f"I have {clause}" if CUES["family_member"].search(clause) else None
    m = _BARE_KIN.match(clause)
    if m is None or not any(cue.search(clause) for cue in CUES.values()):
        return None
    return "my " + clause[len("the ") :] if clause[:4].lower() == "the " else "my " + clause


#: A field of a list about the person: "Condition: coeliac disease", "Meds: metformin".
_FIELD = re.compile(r"^(?P<key>[A-Za-z][\w'&/-]*(?:\s+[\w'&/-]+){0,2})\s*:\s*(?P<value>\S.*)$")


_REQUEST_KEY = re.compile(r"\b(?:me|you|u|i|us|we|this|these|that|please|pls)\b", re.I)
_EMPTY = frozenset({"none", "n/a", "na", "nil", "-", "no", "nothing", "nope", "tbc", "?"})


def field_note(clause: str) -> str | None:
    """``clause`` as a note when it is a short field ("Condition: coeliac disease" is
    "User's condition: coeliac disease"), else None."""
    m = _FIELD.match(clause)
    if m is None or _NOT_MINE.search(clause) or m["value"].strip(" .").lower() in _EMPTY:
        return None
    if _REQUEST_KEY.search(m["key"]):  # "Compare for me: ...", "Translate this: ..."
        return None
    return f"User's {m['key'].lower()}: {m['value'].strip(' ,;.')}"

"""The rule table: which clauses state a fact, what the fact's slot is, and its text.

Each rule is anchored at the start of a clause that ``segment`` already cleaned (no
questions, quotes, tasks, hypotheticals), so a rule only has to recognise one way of
saying one kind of thing. The first rule that accepts a clause wins. A slot names what
the fact is about; ``single`` slots hold one value at a time, so a new value
supersedes the old memory (reconciliation happens in the engine).
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.grammar import pronouns, rewrite
from memoryd.core.extraction.stack import tech
from memoryd.core.extraction.values import (
    ADV,
    AM,
    HAVE,
    NAME,
    NOT,
    Build,
    Draft,
    V,
    deictic,
    find,
    one,
    said,
    slug,
    tidy,
    too_short,
    trim,
)

__all__ = ["ADV", "AM", "HAVE", "NAME", "NOT", "Build", "Draft", "V", "trim"]


# -- builders -------------------------------------------------------------------------


def simple(
    kind: str, slot: str, *, single: bool = False, episodic: bool = False, team: bool = False
) -> Build:
    """The value is the rest of the clause; ``{}`` in the slot is the value's slug."""

    def build(m: re.Match[str], clause: str) -> list[Draft] | None:
        value = trim(m["v"])
        if too_short(value) or deictic(value):
            return None
        name = slot.format(slug(value))
        content = said(m, team=team)
        return one(kind, name, value, content, single=single, episodic=episodic)

    return build


def name_of(slot: str, render: str) -> Build:
    def build(m: re.Match[str], clause: str) -> list[Draft] | None:
        value = trim(m["v"].split(",")[0])  # "Kofi, nobody uses Kwabena"
        words = value.split()
        if not words or len(words) > 4 or deictic(value) or value.lower() in lx.NOT_NAMES:
            return None
        if words[0].lower() in lx.NOT_NAMES:
            return None
        return one("identity", slot, value, render.format(value), single=True)

    return build


_HOBBYIST = re.compile(r"\b(?:amateur|hobby|hobbyist|weekend|aspiring|keen|avid|passionate)\b")


def im_a(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "I'm a/an X": a diet, a job (maybe "at Y"), a parent, or another identity."""
    value = trim(m["v"])
    if deictic(value) or len(value) < 3:
        return None
    low = value.lower()
    content = said(m)
    if re.match(r"(?:big\s+|huge\s+|massive\s+)?fan\b", low):
        return likes(m, clause)
    diet = find(lx.DIETS, low)
    if diet and len(low.split()) <= 3:
        return one("diet", "diet", diet, content, single=diet in lx.MAIN_DIETS)
    if re.match(
        r"(?:single\s+|proud\s+|new\s+|first-time\s+)?(?:mom|mum|mother|dad|father|parent)\b", low
    ):
        return one("family", "family:parent", value, content, single=True)
    if re.search(r"\bspeaker\b", low):
        lang = find(lx.LANGUAGES, low)
        return one("languages", f"language:{slug(lang or value)}", value, content)
    at = re.match(r"(?P<role>.+?)\s+(?:at|for|with|in)\s+(?P<org>.+)$", value, re.I)
    role = (at["role"] if at else value).strip()
    head = role.lower().split()[-1] if role.split() else ""
    if _HOBBYIST.search(low):
        return one("hobbies", f"hobbies:{slug(role)}", role, content)
    if head in ("fan", "lover", "supporter", "nerd", "enthusiast", "addict", "junkie"):
        thing = re.sub(
            r"^(?:big|huge|massive|die-hard|diehard|lifelong|total)\s+", "", role, flags=re.I
        )
        thing = thing.rsplit(" ", 1)[0]
        return one("likes", f"opinion:{slug(thing)}", "likes", content, single=True)
    if _is_job(role.lower(), head):
        past = bool(re.match(r"I\s+(?:was|used\s+to\s+be)\b", clause, re.I))
        if past:
            return one("work", f"past_occupation:{slug(role)}", role, content)
        slots = ("employer",) if at and at["org"][:1].isupper() else ()
        return one("work", "occupation", role, content, single=True, replaces=slots)
    return one("identity", f"identity:{slug(value)}", value, content)


_PLACE_WORD = re.compile(r"(?:in|at|from|on|near|off|out|over|down|up|back)\s", re.I)


def _is_job(role: str, head: str) -> bool:
    if role in lx.NOT_OCCUPATIONS or head in lx.NOT_OCCUPATIONS:
        return False
    if _PLACE_WORD.match(role):  # "I am in denver" is a place, not a job ending in -er
        return False
    words = role.split()
    if any(" ".join(words[i:]) in lx.OCCUPATIONS for i in range(len(words))):
        return True
    return head.endswith(lx.OCCUPATION_SUFFIXES) and len(head) > 4


_ORG = re.compile(
    r"(?:the\s+)?(?-i:[A-Z0-9][\w&'.-]*)(?:\s+(?:(?-i:[A-Z0-9&][\w&'.-]*)|of|de|and|&))*"
)


_NOT_ORG = frozenset(
    [
        "home",
        "school",
        "night",
        "nights",
        "weekends",
        "work",
        "uni",
        "college",
        "church",
        "hospital",
        "office",
        "nightshift",
        "times",
        "least",
        "most",
        "all",
        "it",
        "this",
        "that",
        "the",
        "a",
        "an",
        "my",
        "our",
        "their",
        "his",
        "her",
        "some",
        "any",
        "one",
        "two",
        "lunch",
        "dinner",
        "breakfast",
        "midnight",
        "noon",
        "dawn",
        "first",
        "last",
        "same",
        "different",
        "moment",
        "minute",
    ]
)
_LOWER_ORG = re.compile(
    r"(?P<org>[a-z][a-z0-9&'-]{2,30})(?=\s*$|\s*,|\s+(?:in|on|as|for|since|now)\b)"
)


def works(m: re.Match[str], clause: str) -> list[Draft] | None:
    """Employer (and role) from "I work at X (as a Y)" and the like: one memory whose
    slot is the employer and that also retires the old role when it names one."""
    value = trim(m["v"])
    named = re.match(r"(?:the\s+|a\s+|an\s+)?(?-i:[A-Z0-9])|(?:a|an|the)\s", value)
    remote = re.match(r"(?:home|remotely|remote)\b", value, re.I)
    typed = _LOWER_ORG.match(value)  # "i work at salesforce" typed in a hurry
    if typed and typed["org"] in _NOT_ORG:
        typed = None
    if deictic(value) or not (named or remote or typed):
        return None
    if typed and not named:
        org = typed["org"]
        return one("work", "employer", org, said(m), single=True)
    as_role = re.search(r"\s+as\s+(?:an?\s+|the\s+)?(?P<role>.+)$", value, re.I)
    org_text = value[: as_role.start()] if as_role else value
    org = _ORG.match(org_text)
    name = org[0] if org else org_text
    replaces = ("occupation",) if as_role else ()
    if not org and re.match(r"(?:home|remotely|remote)\b", org_text, re.I):
        return one("work", "work_pattern", org_text, said(m), single=True)
    return one("work", "employer", name, said(m), single=True, replaces=replaces)


def likes(m: re.Match[str], clause: str) -> list[Draft] | None:
    """Likes and dislikes: one slot per thing, so a change of heart replaces it."""
    value = trim(m["v"].split(",")[0])
    value = re.split(_LIKE_CUT, value, maxsplit=1, flags=re.IGNORECASE)[0].strip()
    if deictic(value) or len(value) < 3:
        return None
    thing = re.sub(_GENERIC, "", value, flags=re.IGNORECASE) if len(value.split()) > 1 else value
    negative = bool(_NEGATIVE.match(clause))
    content = said(m)
    if negative and not re.search(
        r"\b(?:not|no|hates?|dislikes?|can ?not|never|avoids?)\b", content
    ):
        content = f"User dislikes {value} ({content})"
    return one(
        "likes", f"opinion:{slug(thing)}", "dislikes" if negative else "likes", content, single=True
    )


_LIKE_CUT = r"\s+(?:anymore|any\s+more|now|after|since|these\s+days|lately|nowadays|at\s+all)\b"
_GENERIC = r"\s+(?:podcasts?|shows?|movies?|films?|music|series|songs?|tv|documentaries)$"
_NEGATIVE = re.compile(
    rf"^(?:I|we)\s+(?:\w+\s+)?(?:{NOT}|do\s+not|does\s+not|did\s+not|hate|dislike|detest|loathe|"
    r"despise|cannot\s+stand|cannot\s+bear|avoid|have\s+gone\s+off|went\s+off|gone\s+off|"
    r"am\s+(?:not|no\s+longer|sick|tired|over|done\s+with))",
    re.IGNORECASE,
)


def prefers(m: re.Match[str], clause: str) -> list[Draft] | None:
    value = trim(m["v"])
    if deictic(value) or too_short(value):
        return None
    head = re.split(
        r"\s+(?:over|to|rather\s+than|instead\s+of|than|in|for|at|on|with|when|while)\s+",
        value,
        maxsplit=1,
    )[0]
    if find(lx.TECH, head):
        return tech("prefer")(m, clause)
    return one("likes", f"preference:{slug(head)}", head, said(m), single=True)


def favorite(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "my favorite band is X": one favorite per thing, a new one replaces it."""
    value = trim(m["v"])
    if deictic(value) or len(value) < 2:
        return None
    what = m["what"] if "what" in m.groupdict() and m["what"] else ""
    if what:
        return one("likes", f"favorite:{slug(what)}", value, said(m), single=True)
    return one(
        "likes",
        f"opinion:{slug(value)}",
        "likes",
        f"{value} {m['be'] if 'be' in m.groupdict() and m['be'] else 'is'} "
        f"User's favorite{(' ' + m['kind2']) if 'kind2' in m.groupdict() and m['kind2'] else ''}",
        single=True,
    )


_ANOTHER = re.compile(r"\b(?:second|another|third|fourth|new|also|too|as\s+well|other)\b", re.I)


def pet(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "my dog is called Rex", "I have a cat named Luna", "our dog Pepper ..."."""
    kind_text = m["kind"].lower()
    kind = lx.PETS.get(kind_text) or lx.PETS.get(kind_text.split()[-1])
    if kind is None:
        return None
    name = trim(m["v"]) if m["v"] else ""
    content = said(m)
    if name and not deictic(name) and len(name.split()) <= 4 and name.lower() not in lx.NOT_NAMES:
        if _ANOTHER.search(clause):  # "a second greyhound, Pickle": one more, not a rename
            return one("pets", f"pet:{kind}:name:{slug(name)}", name, content)
        return one("pets", f"pet:{kind}:name", name, content, single=True)
    return one("pets", f"pet:{kind}", kind_text, content)


_SPEECH = re.compile(
    r"(?:always\s+|just\s+|also\s+|once\s+|never\s+)?(?:keeps?\s+(?:telling|saying|asking|insisting)|"
    r"says|said|told|tells|asked|asks|called|calls|rang|texted|messaged|emailed|went\s+on|"
    r"goes\s+on|thinks|thought|reckons|reckoned|claims|claimed|insists|insisted|"
    r"used\s+to\s+(?:say|tell)|wants\s+me|wanted\s+me|swears|swore)\b",
    re.IGNORECASE,
)


def relation(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "my brother Tom lives in Oslo", "my wife, Aiko, is a doctor", "my son is 5"."""
    rel = re.sub(
        r"^(?:new|current|ex-?|late|former|old|future|soon-to-be|little|big|"
        r"older|younger|baby|eldest|oldest|youngest|two|three)\s+",
        "",
        m["rel"].lower(),
    )
    if rel not in lx.RELATIONS:
        return None
    rest = trim(m["v"])
    if re.match(r"(?:tongue|language|land|country|board|nature)\b", rest, re.I):
        return None
    if _SPEECH.match(rest):  # "my sister keeps telling everyone I'm ...": their words
        return None
    if not rest or deictic(rest):
        return None
    content = said(m)
    is_name = re.match(r"is\s+(?P<n>(?-i:[A-Z][\w'-]+))(?:\s+now)?$", rest)
    leading = re.match(r"(?-i:[A-Z][\w'-]+)(?=\s|,|$)", rest)
    name = is_name["n"] if is_name else (leading[0] if leading else "")
    tail = (m["tail"] or "").strip().lower() if "tail" in m.groupdict() else ""
    naming = bool(re.match(r"(?:'s\s+name|name|is\s+(?:called|named))", tail)) or bool(is_name)
    if rel in lx.SINGLE_RELATIONS and (naming or name):
        who = name or rest
        role = "partner" if rel in lx.PARTNERS else slug(rel)
        return one("family", f"family:{role}", who, content, single=True)
    who = name
    slot = f"family:{slug(rel)}" + (f":{slug(who)}" if who else f":{slug(rest)}")
    return one("family", slot, rest, content)


def reacts(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "Soy gives me a rash": the user reacts to soy (the clause says how)."""
    value = trim(m["v"])
    if deictic(value) or too_short(value):
        return None
    content = f"User reacts badly to {value} ({pronouns(tidy(clause))})"
    return one("allergies", f"allergy:{slug(value)}", value, content)


def condition(m: re.Match[str], clause: str) -> list[Draft] | None:
    value = trim(m["v"])
    if deictic(value):
        return None
    verb = m["verb"].lower()
    if not find(frozenset(lx.CONDITIONS), value) and not re.search(
        r"diagnos|suffer|struggle|living\s+with|live\s+with|recover|treated", verb
    ):
        return None
    return one("health", f"health:{slug(value)}", value, said(m))


def possession(m: re.Match[str], clause: str) -> list[Draft] | None:
    value = trim(m["v"])
    if deictic(value):
        return None
    what = m["what"].lower() if "what" in m.groupdict() and m["what"] else ""
    found = find(lx.POSSESSIONS, what) or find(lx.POSSESSIONS, value)
    content = said(m)
    if found is None:
        tech_word = find(lx.TECH, value)
        if tech_word and lx.TECH[tech_word] == "hardware":
            return one("stack", f"tool:hardware:{slug(tech_word)}", value, content)
        if re.match(r"I\s+(?:\w+\s+)?(?:drive|am\s+driving)\b", clause, re.IGNORECASE):
            return one("possessions", "vehicle", value, content, single=True)
        bought = re.search(r"\b(?:bought|purchased|own|drive|ride)\b", clause[: m.start("v")], re.I)
        if what or bought or value[:1].isupper():
            return one("possessions", f"owns:{slug(what or value)}", value, content)
        return None
    kind = lx.POSSESSIONS[found]
    if re.match(r"I\s+(?:\w+\s+)?(?:drive|am\s+driving)\b", clause, re.IGNORECASE):
        kind = "vehicle"
    single = kind in lx.SINGLE_POSSESSIONS
    slot = kind if single else f"owns:{slug(value)}"
    return one("possessions", slot, value, content, single=single)


def language(m: re.Match[str], clause: str) -> list[Draft] | None:
    value = trim(m["v"])
    found = find(lx.LANGUAGES, value) or find(lx.LANGUAGES, m.string)
    if not found:
        return None
    learning = re.search(
        r"learn|study|studying|practi|brush|taking|classes|lessons|duolingo|\bstart|\bbegan|"
        r"\bbegin|picked\s+up|picking\s+up|took\s+up",
        m.string,
        re.I,
    )
    slot = ("learning:" if learning else "language:") + slug(found)
    return one("languages", slot, value, said(m))


def hobby(kind: str = "hobbies") -> Build:
    def build(m: re.Match[str], clause: str) -> list[Draft] | None:
        value = trim(m["v"])
        if deictic(value) or len(value) < 3 or value.lower().startswith(("your ", "you ")):
            return None
        lead = m.string[: m.start("v")]
        when = re.match(r"(?P<when>.+?)\s*,?\s+(?P<who>I|we)\s+$", lead, re.I)
        if kind == "routines" and when:
            content = rewrite(
                f"{when['who']} {tidy(m.string[m.start('v') :])} {when['when'].lower()}"
            )
        else:
            content = said(m)
        return one(kind, f"{kind}:{slug(value)}", value, content)

    return build


_EVENTS = (
    r"wedding|exam|interview|appointment|surgery|operation|trip|flight|presentation|"
    r"deadline|conference|marathon|race|test|recital|concert|gig|vacation|holiday|move|"
    r"defen[cs]e|launch|checkup|check-up|due\s+date|graduation|party|ceremony|exams|"
    r"thesis\s+defen[cs]e|visit|honeymoon|road\s+trip|retreat|competition|tournament|"
    r"audition|performance|hearing|court\s+date|closing|baby\s+shower|birthday|married|marry"
)
EVENTS = re.compile(rf"\b(?P<event>{_EVENTS})\b", re.I)
_NOT_A_PLAN = re.compile(
    r"(?:know|ask|understand|see|check|make\s+sure|find\s+out|figure|try|get\s+(?:a|an|some|"
    r"the|help|it|this|that)|be\s+able|say|thank|confirm|clarify|mention|order|book\s+a\s+table|"
    r"talk|discuss|go\s+over|share|show|start\s+with|begin|change|add|remove|cancel|create|"
    r"write\s+(?:a|an|me|this|some|up|it)\b|draft|generate|build|fix|convert|compare|learn\s+how|"
    r"improve\s+(?:this|it|my\s+code)|"
    r"decide|figure|work\s+out|choose|pick|watch\s+something)\b",
    re.IGNORECASE,
)


def plan(m: re.Match[str], clause: str) -> list[Draft] | None:
    """Plans and goals keep their date in the text; a dated event (wedding, exam) is
    one slot, so "we pushed the wedding to September" replaces its old date."""
    value = trim(m["v"])
    if deictic(value) or len(value) < 3 or _NOT_A_PLAN.match(value):
        return None
    event = EVENTS.search(clause)
    flies = re.search(r"\b(?:fly|flying)\b", clause, re.IGNORECASE)
    if event or flies:
        name = slug(event["event"]) if event else "flight"
        name = "wedding" if name in ("married", "marry") else name
        return one("plans", f"plan:{name}", value, said(m), single=True, episodic=True)
    topic = trim(re.sub(r"^(?:I|we)\s+(?:am|are|will|would)?\s*", "", tidy(clause), flags=re.I))
    return one("plans", f"plan:{slug(topic)}", value, said(m), episodic=True)


def status(m: re.Match[str], clause: str) -> list[Draft] | None:
    """Retired, freelancing, left a job: the employer and role memories become history."""
    value = trim(m["v"])
    replaces = ("employer", "occupation")
    return one("work", "employment_status", value, said(m), single=True, replaces=replaces)


def age(m: re.Match[str], clause: str) -> list[Draft] | None:
    years = m["v"]
    if not 1 <= int(years) <= 120:
        return None
    short = re.fullmatch(r"I\s+am\s+\d+(?:\s*(?:years?|yrs?)(?:\s+old)?)?", tidy(clause), re.I)
    content = f"User is {years} years old" if short else said(m)
    return one("identity", "age", years, content, single=True)


def medication(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "I'm on 50mg of sertraline": the drug is the slot, the dose its value."""
    drug = m["drug"].lower()
    return one("health", f"health:medication:{slug(drug)}", m["v"], said(m), single=True)


def habit(m: re.Match[str], clause: str) -> list[Draft] | None:
    """Smoking, vaping, drinking: "I quit smoking" replaces "I smoke a pack a day"."""
    what = m["what"].lower()
    root = {"smok": "smoking", "vap": "vaping", "drink": "drinking", "alcohol": "drinking"}
    name = next((v for k, v in root.items() if what.startswith(k)), what)
    value = trim(m.string[m.start("what") :])
    return one("health", f"habit:{name}", value, said(m), single=True)

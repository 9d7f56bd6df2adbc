"""Labelled statements: "Name: Wayra Quispe", "Age: 38", "Current role: UX researcher,
Mercado Libre", "Home base: Dar es Salaam", and introductions that list several facts
at once ("I'm Thabo, 44, a maths teacher from Durban").
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction import rules
from memoryd.core.extraction.values import NAME, Draft, deictic, slug, trim

# label -> (kind, slot ("{}" = the value's slug), single, how the label reads)
_FIELDS: dict[str, tuple[str, str, bool, str]] = {}


def _field(labels: str, kind: str, slot: str, single: bool, reads: str) -> None:
    for label in labels.split(","):
        _FIELDS[label.strip()] = (kind, slot, single, reads)


_field(
    "name,full name,real name,first name,given name,legal name", "identity", "name", True, "name"
)
_field(
    "nickname,nick,preferred name,goes by,call me", "identity", "preferred_name", True, "nickname"
)
_field("pronouns", "identity", "pronouns", True, "pronouns")
_field("birthday,bday,dob,date of birth,birth date", "identity", "birthday", True, "birthday")
_field("gender", "identity", "gender", True, "gender")
_field("nationality,citizenship", "identity", "nationality", True, "nationality")
_field("timezone,time zone,tz", "location", "timezone", True, "time zone")
_field(
    "location,based,based in,home,home base,city,current city,lives in,living in,"
    "residence,where i live,home city,country",
    "location",
    "home_location",
    True,
    "home",
)
_field(
    "hometown,home town,from,originally from,grew up in", "location", "hometown", True, "hometown"
)
_field(
    "job,occupation,role,current role,position,title,job title,profession,day job,work,"
    "what i do,current job,current position",
    "work",
    "occupation",
    True,
    "job",
)
_field(
    "employer,company,workplace,current employer,current company",
    "work",
    "employer",
    True,
    "employer",
)
_field("team", "work", "team", True, "team")
_field("side hustle,side job,side gig", "work", "side_job:{}", False, "side job")
_field("school,university,uni,college,alma mater", "education", "school", True, "school")
_field(
    "degree,education,major,studies,field of study,qualification",
    "education",
    "education:{}",
    False,
    "education",
)
_field("diet,dietary needs,dietary restrictions,eating", "diet", "diet", True, "diet")
_field("allergies,allergy,allergic to,intolerances", "allergies", "allergy:{}", False, "allergies")
_field("languages,language,speaks,spoken languages", "languages", "language:{}", False, "languages")
_field("editor,ide", "stack", "tool:editor", True, "editor")
_field("os,operating system,distro", "stack", "tool:os", True, "operating system")
_field("shell,terminal", "stack", "tool:shell", True, "shell")
_field(
    "stack,tech stack,tools,setup,languages i use,framework,frameworks",
    "stack",
    "tool:other:{}",
    False,
    "stack",
)
_field("cloud,infra,infrastructure,hosting", "stack", "tool:cloud:{}", False, "infrastructure")
_field("hardware,laptop,machine,computer,dev machine", "possessions", "laptop", True, "computer")
_field("phone", "possessions", "phone", True, "phone")
_field("car", "possessions", "vehicle", True, "car")
_field("pets,pet", "pets", "pet:{}", False, "pets")
_field("hobby,hobbies,hobby-wise,interests,pastimes", "hobbies", "hobbies:{}", False, "hobbies")
_field("kids,children", "family", "family:children", True, "children")
_field("partner,wife,husband,spouse", "family", "family:partner", True, "partner")
_field(
    "health,conditions,medical conditions,medication,medications,meds",
    "health",
    "health:{}",
    False,
    "health",
)

#: Labels that may also be joined by "is" ("Day job is ..."); others read as sentences.
_IS_LABELS = frozenset(["day job", "current role", "home base", "time zone", "timezone", "nick"])


def field(m: re.Match[str], clause: str) -> list[Draft] | None:
    label = " ".join(m["field"].lower().split())
    label = re.sub(r"\s+(?:for\s+context|wise|info)$|-wise$", "", label).strip()
    favorite = re.match(r"(?:all-time\s+)?(?:favou?rite|fave|fav)\s+(?P<what>[\w -]{2,20})$", label)
    separator = m.string[m.end("field") : m.start("v")].strip()
    if separator == "is" and label not in _IS_LABELS:
        return None
    value = trim(m["v"])
    if deictic(value) or len(value) < 2:
        return None
    if favorite:
        what = favorite["what"].strip()
        value = trim(value.split(",")[0])
        content = f"User's favorite {what} is {value}"
        return [Draft("likes", f"favorite:{slug(what)}", value, content, True)]
    known = _FIELDS.get(label)
    if known is None:
        return None
    kind, slot, single, reads = known
    if slot in ("name", "preferred_name", "age") or reads == "nickname":
        value = trim(value.split(",")[0])
    if slot == "age":
        years = re.match(r"\d{1,3}", value)
        if not years or not 1 <= int(years[0]) <= 120:
            return None
        return [Draft("identity", "age", years[0], f"User is {years[0]} years old", True)]
    content = f"User's {reads} is {value}"
    return [Draft(kind, slot.format(slug(value)), value, content, single)]


_AGE = re.compile(r"^(?:age\s+|aged\s+)?(?P<age>\d{1,3})(?:\s*(?:years?\s+old|yo|y/o))?$", re.I)
_INTRO_NAME = re.compile(rf"^{NAME}$")


def intro(m: re.Match[str], clause: str) -> list[Draft] | None:
    """ "I am Thabo, 44, a maths teacher from Durban": a name, then comma-separated facts."""
    name = trim(m["v"])
    if name.split()[0].lower() in lx.NOT_NAMES:
        return None
    drafts = [Draft("identity", "name", name, f"User's name is {name}", True)]
    for part in (p.strip() for p in m["rest"].split(",")):
        age = _AGE.match(part)
        if age and 1 <= int(age["age"]) <= 120:
            years = age["age"]
            drafts.append(Draft("identity", "age", years, f"User is {years} years old", True))
            continue
        statement = part if re.match(r"(?:a|an|the)\s", part, re.I) else f"a {part}"
        inner = re.match(r"^I\s+am\s+(?:a|an|the)\s+(?P<v>.+)$", f"I am {statement}")
        if inner and len(part.split()) <= 8:
            drafts.extend(rules.im_a(inner, f"I am {statement}") or [])
    return drafts

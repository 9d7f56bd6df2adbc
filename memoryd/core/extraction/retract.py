"""Taking a statement back: "forget that I said I like jazz", "ignore what I
told you about my job", "I'm not moving to Perth after all", "I no longer have the cat,
she passed away", "the wedding is off".

A retraction stores nothing: it names what to retire. ``retraction`` returns the
supersede targets (``slot~words``: the owner's memories of that slot that say those
words; ``*~words``: of any slot) for the engine to retract, or None when the clause
withdraws nothing. What was withdrawn is found the way it was first captured: the
withdrawn statement goes through the same rules, so "forget that I said I like jazz"
retires exactly the memory "I like jazz" made.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.values import Draft, slugify, trim

__all__ = ["ended", "retraction"]

Match = Callable[[str], list[Draft]]

_FORGET = re.compile(
    r"^(?:(?:please|pls|actually|oh|and|also|just|can\s+you|could\s+you)\s+)*"
    r"(?:forget|ignore|disregard|delete|remove|erase|drop|scrap|strike)\s+"
    r"(?:about\s+)?(?:that\s+|what\s+|the\s+(?:bit|part|thing)\s+)?"
    r"(?:(?:I|me)\s+(?:said|told\s+you|mentioned|wrote|saying|telling\s+you|mentioning)\s*)?"
    r"(?:(?:about|that|re|regarding|on)\s+)?(?P<what>.+)$",
    re.IGNORECASE,
)
_NEVER_MIND = re.compile(
    r"^(?:I\s+)?(?:never\s*mind|nvm|nevermind)\s+(?:about\s+|what\s+I\s+said\s+about\s+)?"
    r"(?P<what>.+)$",
    re.I,
)
_DONT_KEEP = re.compile(
    r"^(?:(?:please|pls|so|and|actually)\s+)*(?:I\s+)?(?:do\s+not|don't|dont|never)\s+"
    r"(?:want\s+you\s+to\s+)?(?:keep|save|store|remember|hold\s+on\s+to)\s+"
    r"(?:anything|that|this|it|what\s+I\s+said)\s*(?:about|on|re|regarding)?\s*(?P<what>.*)$",
    re.I,
)
_WHATEVER = re.compile(
    r"^(?:(?:please|pls|can\s+you|could\s+you)\s+)*(?:delete|forget|remove|erase|drop)\s+"
    r"(?:whatever|everything|anything|all)\s+(?:I\s+)?(?:told|said|mentioned|wrote|shared)"
    r"(?:\s+(?:you|to\s+you))?\s+(?:about|on|regarding)\s+(?P<what>.+)$",
    re.I,
)
_ABOUT_FORGET = re.compile(
    r"^(?:about|re|regarding|as\s+for)\s+(?P<what>.{2,60}?)\s*,?\s*(?:please\s+)?"
    r"(?:forget|ignore|delete|disregard|scrap)\s+(?:it|that|this)\b",
    re.I,
)
_AFTER_ALL = re.compile(
    r"(?:\b(?P<who>I|we)\s+(?P<be>am|are|will|do|have)\s+)?\bnot\s+(?P<rest>.+?)\s+after\s+all\b",
    re.IGNORECASE,
)
_OFF = re.compile(
    r"^(?:(?:the|our|my)\s+(?P<what>[\w\s-]{2,40}?)\s+(?:is|has\s+been|got|was)\s+"
    r"|(?P<bare>[\w-]{3,20}(?:\s+[\w-]{3,20})?)\s+(?:is|has\s+been|got|was)\s+"
    r"(?=called\s+off|cancell?ed|scrapped))"
    r"(?:off|cancell?ed|called\s+off|scrapped)\b",
    re.IGNORECASE,
)
_CALLED_OFF = re.compile(
    r"^(?:I|we)\s+(?:have\s+)?(?:called\s+off|cancell?ed|scrapped|dropped)\s+"
    r"(?:the|our|my)\s+(?P<what>[\w\s-]{2,40}?)(?:\s|$|,)",
    re.IGNORECASE,
)
_GONE = re.compile(
    r"^(?:I|we)\s+(?:no\s+longer|do\s+not|don't)\s+have\s+(?:the|my|our|a|an|any)\s+"
    r"(?P<what>[\w-]+(?:\s+[\w-]+)?)(?:\s+(?:anymore|any\s+more))?"
    r"(?:\s*,?\s*(?:she|he|it|they)\s+(?:passed(?:\s+away)?|died|ran\s+away|was\s+rehomed|"
    r"got\s+rehomed)\b.*)?$",
    re.IGNORECASE,
)
_DIED = re.compile(
    r"^(?:(?:my|our|the)\s+(?P<what>[\w-]+(?:\s+[\w-]+)?)\s+(?:passed(?:\s+away)?|died|"
    r"was\s+put\s+down|had\s+to\s+be\s+put\s+down)|(?:I|we)\s+(?:had\s+to\s+)?(?:put\s+down|"
    r"rehomed|gave\s+away|sold)\s+(?:my|our|the)\s+(?P<what2>[\w-]+(?:\s+(?!(?:last|this|next|yesterday|"
    r"today|on|in|at|for|ago|and|so|but)\b)[\w-]+)?))\b",
    re.IGNORECASE,
)
#: "forget my job" names a topic whose memories may not say the word
_TOPICS: dict[str, tuple[str, ...]] = {
    "job": ("employer", "occupation", "work_pattern"),
    "work": ("employer", "occupation", "work_pattern"),
    "employer": ("employer",),
    "company": ("employer",),
    "where i live": ("home_location",),
    "where i am living": ("home_location",),
    "my address": ("home_location",),
    "home": ("home_location",),
    "diet": ("diet", "diet:*"),
    "medication": ("health:medication:*",),
    "meds": ("health:medication:*",),
    "medicine": ("health:medication:*",),
    "fiance": ("family:partner", "relationship_status"),
    "fiancé": ("family:partner", "relationship_status"),
    "fiancee": ("family:partner", "relationship_status"),
    "fiancée": ("family:partner", "relationship_status"),
    "partner": ("family:partner",),
    "boyfriend": ("family:partner",),
    "girlfriend": ("family:partner",),
    "husband": ("family:partner",),
    "wife": ("family:partner",),
    "age": ("age",),
    "name": ("name", "preferred_name"),
    "phone": ("phone",),
    "allergy": ("allergy:*",),
    "allergies": ("allergy:*",),
    "allergic": ("allergy:*",),
    "address": ("home_location",),
    "address information": ("home_location",),
    "location": ("home_location",),
}
_STATEMENT = re.compile(r"^(?:I|we|my|our)\b", re.IGNORECASE)


def _targets(drafts: list[Draft]) -> tuple[str, ...]:
    """A slot that names its thing ("opinion:jazz", "allergy:peanuts") is retired
    whole; a slot of one value ("home_location") only where it says the value."""
    out: list[str] = []
    for draft in drafts:
        slot = ":".join(filter(None, (slugify(part, 60) for part in draft.slot.split(":"))))
        words = draft.value.strip()
        if not slot:
            continue
        out.append(slot if ":" in slot or not words else f"{slot}~{words}")
        if len(words) >= 3 and words not in ("likes", "dislikes"):
            # the same thing said in other words may sit in another slot ("moving to
            # Perth" against "moving to Perth in March"): any memory saying the value
            out.append(f"*~{words}")
    return tuple(out)


_STOP = frozenset(
    [
        "that",
        "this",
        "the",
        "a",
        "an",
        "my",
        "our",
        "new",
        "old",
        "thing",
        "things",
        "stuff",
        "bit",
        "part",
        "about",
        "what",
        "told",
        "said",
        "you",
        "i",
        "me",
        "it",
        "whole",
        "whatever",
        "everything",
        "anything",
        "all",
        "plan",
        "plans",
        "idea",
        "booking",
        "rule",
        "rules",
        "info",
        "information",
        "from",
        "earlier",
        "before",
        "please",
        "pls",
    ]
)


def _words(what: str) -> str:
    """The words that name it: the proper nouns ("that new hobby at the Depot" ->
    "Depot"; "Char Dham plan" -> "Char Dham"), else the last content word."""
    names = re.findall(r"(?-i:[A-Z][\w'-]+)(?:\s+(?-i:[A-Z][\w'-]+))*", what)
    names = [n for n in names if n.lower() not in _STOP and n not in ("I",)]
    if names:
        return str(names[-1])
    content = [w for w in re.findall(r"[\w'-]+", what.lower()) if w not in _STOP]
    return _stem(content[-1]) if content else ""


def _stem(word: str) -> str:
    """ "strawberry" and "strawberries" both say "strawberr": the LIKE finds either."""
    for end, keep in (("ies", 3), ("y", 1), ("es", 2), ("s", 1)):
        if word.endswith(end) and len(word) - keep >= 4:
            return word[:-keep]
    return word


def _topic(what: str) -> tuple[str, ...]:
    what = trim(what)
    low = re.sub(r"^(?:my|our|the|me\s+being|being|me)\s+", "", what.lower()).strip()
    low = re.sub(r"\s+(?:thing|stuff|bit|part|business)$", "", low)
    if not low:
        return ()
    named = _words(what)
    said = (f"*~{named}",) if len(named) >= 3 else ()
    if low in _TOPICS:
        return _TOPICS[low] + said
    for word in reversed(low.split()):
        if word in _TOPICS:
            return _TOPICS[word] + said
    return said


_WRONG = re.compile(
    r"^(?:(?:turns\s+out|it\s+turns\s+out|actually|so)\s+)*(?:(?:that|the|my|our)\s+)?"
    r"(?P<what>[\w' -]{2,40}?)"
    r"(?:\s+thing)?\s+(?:was|is)\s+(?:wrong|not\s+true|a\s+mistake|incorrect|a\s+false\s+alarm|"
    r"nothing|off|cancell?ed|scrapped|not\s+happening|dead)\b"
    r"|^(?:(?:that|the|my|our)\s+)?(?P<what2>[\w' -]{2,40}?)\s+(?:got|has\s+been|have\s+been)\s+"
    r"(?:cancell?ed|called\s+off|scrapped)\b",
    re.IGNORECASE,
)
#: what ``subject.restore`` puts before a subjectless clause ("that allergy thing was
#: wrong" read as "I have a that allergy ...")
_RESTORED = re.compile(r"^I\s+(?:have\s+a|have|am\s+a|am)\s+(?=(?:that|the|this)\s)", re.I)
_MEDS_WORDS = frozenset(
    [
        "tablets",
        "pills",
        "meds",
        "medication",
        "medications",
        "medicine",
        "medicines",
        "antibiotics",
        "painkillers",
        "prescription",
        "injections",
        "jabs",
    ]
)
_STOPPED_MEDS = re.compile(
    r"^(?:I|we)\s+(?:have\s+)?(?:\w+\s+)?(?:stopped|quit|came\s+off|come\s+off|finished|"
    r"am\s+off|am\s+done\s+with|no\s+longer\s+take|do\s+not\s+take)\s+(?:taking\s+)?(?:the|my|all\s+the|"
    r"all\s+my)\s+(?P<what>tablets|pills|meds|medications?|medicines?|antibiotics|painkillers|"
    r"prescription|injections|jabs|[\w-]+(?=\s+(?:tablets|pills|completely|altogether|now)))\b",
    re.IGNORECASE,
)
_NONE_LEFT = re.compile(
    r"^(?:there\s+is\s+|there's\s+)?no\s+(?:more\s+)?(?P<what>[\w-]+)\s+(?:in\s+the\s+(?:house|family|home)\s+)?"
    r"(?:anymore|any\s+more|now)\b",
    re.IGNORECASE,
)
_TOOK_OFF = re.compile(
    r"^(?:the\s+|my\s+)?(?:doc|doctor|gp|specialist|consultant|psychiatrist)\s+(?:has\s+)?"
    r"(?:(?:took|taken|take)\s+me\s+off|stopped)\s+(?:the|my|all)\s+(?:[\w-]+\s+)?(?P<what>meds|medication|"
    r"medicines?|tablets|pills|insulin|[\w-]+)\b",
    re.IGNORECASE,
)


def _owned(what: str) -> tuple[str, ...] | None:
    """What a thing the user no longer has retires: its slot when the lexicon knows
    the kind ("the car" -> the vehicle), and what says the word."""
    word = what.lower()
    kind = lx.POSSESSIONS.get(word) or ("pet" if word in lx.PETS else None)
    slots: tuple[str, ...] = ()
    if kind == "pet":
        slots = (f"pet:{lx.PETS[word]}:*",)
    elif kind in lx.SINGLE_POSSESSIONS:
        slots = ({"laptop": "computer"}.get(kind, kind),)
    said = (f"*~{_stem(word)}",) if len(word) >= 3 else ()
    return (slots + said) or None


#: A word every retraction pattern below needs (a fast first look).
_CUE = re.compile(
    r"\b(?:forget|ignore|disregard|delete|remove|erase|drop|scrap|strike|mind|nvm|nevermind|"
    r"after\s+all|off|cancell?ed|scrapped|longer|passed|died|down|rehomed|gave|sold|wrong|true|"
    r"mistake|incorrect|alarm|nothing|happening|dead|stopped|quit|finished|done|keep|save|store|"
    r"remember|hold|anymore|more|now|stop|need|have|quitted|given|packed|pulled|resigned|"
    r"retired|walked|ditched|rid|left)\b",
    re.IGNORECASE,
)
# "you can stop using bullet points", "no need to keep it short anymore": a standing
# instruction taken back (the profile stops carrying it)
_STOP_DOING = re.compile(
    r"^(?:(?:please|pls|ok|okay|so|and|actually|also|oh|btw|but)\s+)*"
    r"(?:(?:you|u)\s+(?:can|may|could)\s+(?:now\s+)?stop|feel\s+free\s+to\s+stop|"
    r"it'?s\s+ok(?:ay)?\s+to\s+stop|(?:there'?s\s+|there\s+is\s+)?no\s+(?:more\s+)?need\s+"
    r"(?:to|for)|(?:you|u)\s+(?:do\s+not|don'?t|dont)\s+(?:need|have)\s+to)\s+"
    r"(?:(?:use|using|do|doing|give|giving|add|adding|write|writing|keep|keeping|put|putting|"
    r"answer|answering|reply|replying|respond|responding|call|calling)\s+(?:me\s+)?)?"
    r"(?P<what>.+?)(?:\s+(?:any\s*more|from\s+now\s+on|now|with\s+me|for\s+me))*$",
    re.IGNORECASE,
)
_ABOUT = re.compile(r"^(?:about|re|regarding|as\s+for|on)\s+(?P<what>.{2,60})$", re.IGNORECASE)
_FROM_MEMORY = re.compile(
    r"\s+(?:from\s+(?:your\s+)?(?:memory|memories|notes)|please|pls|too|as\s+well|now)\b.*$", re.I
)
_IT = frozenset({"", "it", "that", "this", "them", "those", "all that"})


def retraction(clause: str, match: Match, before: str = "") -> tuple[str, ...] | None:
    """What ``clause`` withdraws (supersede targets), or None when it withdraws
    nothing. ``match`` is the rule table, to read a withdrawn statement as captured;
    ``before`` is the clause before it ("About the pilates, please forget it")."""
    if _CUE.search(clause) is None:  # most clauses withdraw nothing: one search says so
        return None
    clause = _RESTORED.sub("", clause)
    stop = _STOP_DOING.match(clause)
    if stop is not None:  # the instructions that say those words
        named = _words(stop["what"])
        return (f"instruction:*~{named}",) if len(named) >= 3 else None
    m = (
        _WHATEVER.match(clause)
        or _ABOUT_FORGET.match(clause)
        or _FORGET.match(clause)
        or _NEVER_MIND.match(clause)
        or _DONT_KEEP.match(clause)
    )
    if m is not None and _FROM_MEMORY.sub("", m["what"]).strip(" ,.!").lower() in _IT:
        about = _ABOUT.match(before.strip(" ,.!"))
        return (_topic(about["what"]) or None) if about else None
    if m is not None:
        what = re.split(r",|;|\s+(?:and|but|because|cause|cuz|as|since|so)\s+", m["what"])[0]
        what = what.strip(" ,.!")
        if _STATEMENT.match(what):
            found = _targets(match(what))
            if found:
                return found
        return _topic(what) or None
    after = _AFTER_ALL.search(clause)
    if after is not None:  # "I'm not moving to Perth after all"
        who, be = (
            after["who"] or "I",
            after["be"]
            or (
                "am"
                if after["rest"].endswith("ing") or after["rest"].split()[0].endswith("ing")
                else "do"
            ),
        )
        positive = f"{who} {be} {after['rest']}"
        found = _targets(match(positive))
        if found:
            return found
        last = positive.split()[-1]
        return _topic(last) or None  # "I'm not allergic after all"
    m = _OFF.match(clause) or _CALLED_OFF.match(clause)
    if m is not None:
        what = trim(m["what"] or m.groupdict().get("bare") or "")
        event = "wedding" if what.lower() in ("wedding", "marriage") else slugify(what, 60)
        named = _words(what)
        return (f"plan:{event}", f"*~{named}") if len(named) >= 3 else None
    wrong = _WRONG.match(clause)
    if wrong is not None:  # "that allergy thing was wrong", "Char Dham plan is cancelled"
        return _topic(wrong["what"] or wrong["what2"]) or None
    none_left = _NONE_LEFT.match(clause)
    if none_left is not None:  # "No cat in the house anymore"
        return _owned(none_left["what"])
    stopped = _STOPPED_MEDS.match(clause) or _TOOK_OFF.match(clause)
    if stopped is not None:  # "I've stopped the tablets completely"
        drug = stopped["what"].lower()
        if drug in _MEDS_WORDS:
            return ("health:medication:*",)
        return (f"*~={stopped['what']}",) if len(drug) >= 4 else None  # "the IV": no drug
    m = _GONE.match(clause) or _DIED.match(clause)
    if m is not None:
        what = trim(m.group("what") or m.groupdict().get("what2") or "")
        head = what.split()[-1] if what else ""
        return _owned(head) if len(head) >= 3 else None
    return None


#: Something of the person's that ended: "quit ballet", "Gave up netball after I did my
#: ankle", "I've pulled out of the marathon", "Finally sold that pontoon", "I resigned
#: from Mou Foods", "left Google". Only the writer's own (I, we, or no subject) and only
#: said as done: "should I quit?", "if I sell the boat", "my sister quit" match nothing.
_ENDED = re.compile(
    r"^(?:(?:so|and|but|well|ok|okay|yeah|ya|lol|actually|finally|officially|just|also|"
    r"sadly|anyway|ugh|update|news)[\s,:]+)*"
    r"(?:(?:I|we)\s+(?:(?:have|had|'ve|ve|just|finally|officially|also|already)\s+)*|"
    r"(?:I've|we've|ive)\s+(?:(?:just|finally|officially|also|already)\s+)*)?"
    r"(?P<verb>quit|quitted|gave\s+up|given\s+up|packed\s+in|sold(?!\s+out)|"
    r"pulled\s+out\s+of|resigned\s+from|walked\s+away\s+from|ditched|"
    r"got\s+rid\s+of)\s+"
    r"(?:(?:the|my|our|that|those|this|with|at|on|from|in)\s+)*(?P<what>[^,;.!?()]+)",
    re.IGNORECASE,
)
#: where the thing's name ends: "netball after I did my ankle", "the rugby now"
_ENDED_TAIL = re.compile(
    r"\s+(?:after|because|cause|cuz|coz|since|so|as|and|but|to|for|in|on|at|from|by|with|"
    r"some|entirely|totally|fully|this|last|yesterday|"
    r"today|tonight|now|already|too|anymore|any\s+more|altogether|completely|though|lol|"
    r"haha|ago|earlier|recently|finally|at\s+last|in\s+the\s+end|months?|weeks?|years?)\b.*$",
    re.IGNORECASE,
)


def ended(clause: str) -> tuple[str, ...] | None:
    """What a statement that something of the person's ended retires (supersede
    targets, the thing's own words whole: "seat" is not "Seattle"), or None. The caller
    decides whether the words also state a lasting fact ("I quit caffeine in January" is
    a diet; "quit ballet" ends a hobby)."""
    if _CUE.search(clause) is None:
        return None
    m = _ENDED.match(clause.strip())
    if m is None:
        return None
    what = _ENDED_TAIL.sub("", m["what"]).strip(" '\"")
    words = re.findall(r"[\w'-]+", what)
    if not words or len(words) > 4:
        return None  # "quit the work WhatsApp group chat for the choir": no one thing
    names = re.findall(r"(?-i:[A-Z][\w&'-]+)(?:\s+(?-i:[A-Z][\w&'-]+))*", what)
    if names:
        thing = names[-1]  # "Mou Foods", "the Hallam marathon"
    else:
        head = words[-1].lower()
        if head in _TOPICS and len(words) == 1:
            return _TOPICS[head]  # "quit my job": the job, whatever its words
        if head in _TOPICS or head in _GENERIC_ENDS:
            head = words[-2].lower() if len(words) > 1 else ""  # "the keto diet" -> keto
        thing = head
    if len(thing) < 4 or thing.lower() in _NOT_A_THING:
        return None
    return (f"*~={thing}",)


#: the last word of a thing that names its kind, not which one ("the café job")
_GENERIC_ENDS = frozenset({"job", "thing", "stuff", "plan", "plans", "class", "classes", "lessons"})
#: a time or a common word is no thing of theirs ("gave up my Saturday", "quit the app")
_NOT_A_THING = frozenset(
    re.findall(
        r"\w+",
        "monday tuesday wednesday thursday friday saturday sunday saturdays sundays weekend "
        "weekends morning mornings evening evenings night nights time today tonight week "
        "month year seat place spot turn chance idea hope that this there them office "
        "group chat",
    )
)

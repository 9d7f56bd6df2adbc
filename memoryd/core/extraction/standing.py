"""Standing instructions however they are asked for: "can u keep ur replies
short from now on", "would you mind replying to me in Japanese", "I'd appreciate a
neutral tone in all of our future exchanges", "you don't need to dumb down the
electrical stuff with me", "No markdown.".

The segmenter keeps statements and drops requests; these are requests, but about how
to answer the person from now on, not a task for this turn. A sentence is one when it
asks the assistant something (please, can you, I'd like you to, you can, no need to,
a bare imperative) and either says it stands (from now on, always, in future chats) or
is about the manner of answering this person (reply to me in, talk to me, call me, be
more blunt with me, skip the basics, metric units). ``directive`` gives the request's
words; the caller tries the rule table on them first ("call me Bazza") and files the
rest as an instruction. Pure and stdlib-only.
"""

from __future__ import annotations

import re

from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction.leaders import TRANSIENT

__all__ = ["AND_THEN", "MAY_ASK", "about_answering", "directive", "one_off", "stands"]

_I = re.IGNORECASE

#: A second request joined to the first: "keep it short and use bullet points".
AND_THEN = re.compile(
    r"(?:,\s*|\s+)(?:and|also|plus)\s+(?:(?:please|pls|always|never)\s+)?(?=(?:use|keep|give|"
    r"write|reply|respond|answer|add|put|include|avoid|skip|stop|start|end|call|address|be|"
    r"show|format|stick|limit|bold|sign|no|don'?t|do\s+not|never)\b)",
    _I,
)

_FILLER = re.compile(
    r"^(?:(?:oh|ok|okay|also|and|btw|by\s+the\s+way|so|actually|fyi|but|right|anyway|random\s+but|"
    r"one\s+(?:more\s+)?(?:thing|request)(?:\s+though|\s+tho)?|quick\s+(?:one|thing)|new\s+rule|"
    r"new\s+preference|preference\s+time|for\s+future\s+reference|(?:in|for)\s+(?:the\s+)?future|"
    r"going\s+forward|from\s+now\s+(?:on(?:wards)?|onwards)|from\s+next\s+(?:time|chat)\s*(?:on(?:wards)?)?|"
    r"from\s+here\s+on(?:\s+out)?|for\s+me|for\s+all\s+future\s+\w+|mate|cheers|thanks|thank\s+you|"
    r"hey|hi|yeah|yes|lol|haha|please\s+note|just\s+so\s+you\s+know|heads\s+up|one\s+request|"
    r"a\s+(?:small|quick)\s+request)\b[\s,:;.!\u2014\u2013-]*)+",
    _I,
)
# What a request about answering asks the assistant to do.
_VERBS = (
    r"(?:use|using|give|write|reply|respond|answer|say|start|end|include|add|put|call|address|"
    r"mention|suggest|recommend|ask|tell|show|keep|make|explain|format|bold|list|be|talk|speak|"
    r"assume|skip|round|convert|quote|cite|sign|sugarcoat|bring|mix|offer|leave|go|send|"
    r"emojis?|markdown|jargon|bullets?|tables?)"
)
_ASK = re.compile(
    r"^(?:"
    r"(?:please|pls|plz|kindly)\s+(?:do\s+)?(?P<a>.+)"
    r"|(?:reckon|think|guess)\s+(?:you|u)\s+(?:could|can|would)\s+(?P<j>.+)"
    r"|(?:(?:reckon|think|do\s+you\s+think|d'?you\s+reckon|any\s+chance)\s+)?"
    r"(?:can|could|would|will)\s+(?:you|u|ya)\s+(?:please\s+|pls\s+|kindly\s+)?"
    r"(?:(?:mind|consider)\s+)?(?P<b>.+)"
    r"|(?:can|could|shall)\s+we\s+(?P<c>(?:switch|stick|keep|use|go|talk|speak|chat|move|do)\b.+)"
    r"|i(?:'d|\s+would)\s+(?:like|love|prefer|appreciate(?:\s+it)?|rather)(?:\s+(?:it\s+)?if)?\s+"
    r"(?:that\s+)?(?:you|u)\s+(?:to\s+|could\s+|would\s+|can\s+)?(?P<d>.+)"
    r"|i\s+(?:want|need)\s+(?:you|u)\s+to\s+(?P<e>.+)"
    r"|i(?:'d|\s+would)\s+(?:ask|request|appreciate\s+it|prefer\s+it)\s+(?:that|if)\s+(?:you|u)\s+"
    r"(?:could\s+|would\s+|to\s+)?(?P<i>.+)"
    r"|(?:you|u)\s+(?:can|may|should|could|must)\s+(?P<f>.+)"
    rf"|(?:do|just)\s+(?P<g>{_VERBS}\b.*)"
    rf"|(?P<h>(?:always|alwys|never|don'?t|dont|do\s+not|stop|no\s+more)\s+(?:\w+ly\s+)?"
    rf"{_VERBS}\b.*)"
    r")$",
    _I,
)
_WISH = re.compile(
    r"^i(?:'d|\s+would)\s+be\s+(?:grateful|glad|happy|thankful)\s+if\s+(?P<v>(?:your|ur|all|the|"
    r"you)\b.+)$",
    _I,
)
_NEGATIVE = re.compile(
    r"^(?:(?:you|u)\s+(?:do\s+not|don'?t|dont)\s+(?:need|have)\s+to|no\s+need\s+to|"
    r"there\s+is\s+no\s+need\s+to)\s+(?P<v>.+)$",
    _I,
)
_PREFER = re.compile(
    r"^i(?:'d|\s+would)\s+(?:prefer|like|appreciate|love)\s+(?:that\s+)?(?P<v>(?:a|an|the|my|more|less|"
    r"shorter|longer|short|detailed|all|answers|replies|responses|it\s+in|things)\b.+)$",
    _I,
)
_IMPERATIVE = re.compile(
    r"^(?P<v>(?:reply|respond|answer|write|talk|speak|use|keep|give|call|address|show|put|"
    r"format|skip|avoid|stick|switch|be|limit|start|begin|end|include|bold|sign|explain|"
    r"tell|make|stop|drop|leave|cut)\b.+)$",
    _I,
)
_TERSE = re.compile(
    r"^(?P<v>(?:no|less|more|fewer|shorter|longer|only|plain|bullet|metric|imperial|"
    r"short|brief|detailed)\s+(?:\w+\s+){0,3}?(?:markdown|emojis?|jargon|enthusiasm|detail|"
    r"details|fluff|waffle|text|answers?|replies|responses|bullets?|bullet\s+points|"
    r"tables?|headings|small\s+talk|essays?|formal\w*|casual|politeness|exclamation\s+marks|"
    r"units|only|please|prose|sentences|words|paragraphs?|code|explanations?))"
    r"(?:\s+(?:only|please|pls|thanks))*$",
    _I,
)
_FOR_ME = re.compile(
    r"^(?P<v>(?:no|less|more|fewer)\s+(?:\w+\s+){0,3}?\w+\s+(?:for|with)\s+me)$", _I
)
_FORMATISH = re.compile(
    r"^(?P<v>(?:[\w-]+\s+){0,4}?(?:bullet\s*points?|bullets|paragraphs?|lines|sentences|words|"
    r"headings|tables|emojis?|code\s+blocks|numbered\s+lists?|steps)(?:\s+\w+){0,5}?)"
    r"(?:[\s,]+(?:please|pls|plz|thanks|max|maximum|only|per\s+(?:answer|reply|response)))+$",
    _I,
)
_LANGS = "|".join(sorted((re.escape(w) for w in lx.LANGUAGES), key=len, reverse=True))
_LANG_ONLY = re.compile(
    rf"^(?:in\s+)?(?P<lang>{_LANGS})(?:\s+only)?(?:\s*,?\s*(?:please|pls|plz|thanks))+$", _I
)
_STANDS = re.compile(
    r"\b(?:from\s+now|frm\s+now|now\s+on|going\s+forward|from\s+here|onwards?|"
    r"(?:in|for)\s+(?:the\s+)?future|future\s+(?:chats?|conversations?|answers?|replies|"
    r"responses|exchanges|sessions|suggestions)|future\s+\w+\s+(?:suggestions|answers|replies|chats)|always|alwys|never|every\s+time|each\s+time|"
    r"whenever|any\s*more|in\s+(?:all\s+)?(?:our|my)\s+(?:\w+\s+)?(?:chats?|conversations?|"
    r"exchanges)|for\s+our\s+chats|(?:all|every|each)\s+(?:of\s+)?(?:your|ur)\s+(?:answers?|"
    r"replies|responses|messages)|(?:all|any)\s+future\s+\w+|future\s+correspondence|"
    r"(?:every|each|all|any)\s+(?:\w+\s+)?(?:answers?|replies|responses|explanations?|messages?|"
    r"reply|response|time|chat|conversation|question|steps?)|(?:when|wen|whenever)\s+i\s+ask)\b",
    _I,
)
# How this person is to be answered, when nothing says it stands.
_MANNER = re.compile(
    r"\b(?:(?:reply|respond|answer|talk|speak|chat)\w*\s+(?:to\s+|with\s+)?me\b|"
    r"(?:call|address)\s+me\b|with\s+me\b|w/?\s+me\b|write\s+to\s+me\b|"
    rf"(?:reply|respond|answer|talk|speak|write|chat)\w*\s+(?:\w+\s+)?in\s+(?:{_LANGS})\b|"
    r"without\s+explaining|w/o\s+explaining|no\s+need\s+to\s+explain|"
    r"mph|km/?h|kmh|kph|miles|kilomet\w+|metres|meters|millimet\w+|feet|inches|celsius|"
    r"fahrenheit|kilos|kilograms|pounds|lbs|stones?|grams|ounces|litres|liters|gallons|metric|"
    r"imperial|24-?hour|am/pm|dd/mm|mm/dd|latex|markdown|"
    r"(?:short|shorter|brief|long|longer|detailed|simple|simpler|plain)\s+(?:\w+\s+)?(?:answers?|"
    r"replies|responses|explanations?|versions?|english)|"
    r"(?:avoid|skip|never|don'?t|dont|do\s+not|no)\b[^.!?]*\bfor\s+me\b|"
    r"(?:your|ur)\s+(?:answers?|replies|responses)\b|"
    r"skip\s+the\s+(?:basics|beginner|hand|intro)|dumb\s+(?:it\s+|things\s+)?down|"
    r"sugar\s*coat|jargon|technical\s+(?:terms|terminology|words)|terminology|"
    r"explain\w*\s+(?:(?:things|stuff|it|everything)\s+)?(?:like|simply|in\s+simple|as\s+if))",
    _I,
)
# Work for this turn ("write me a limerick", "make a summary of this email"): a
# standing request only when it says in so many words that it stands.
# ... unless what is to be written is the answers themselves: "write only short answers"
_ABOUT_ANSWERS = re.compile(
    r"^\w+(?:\s+me)?\s+(?:\w+\s+){0,3}?(?:answers?|replies|responses|explanations?|versions?)\b", _I
)
_TASK_VERB = re.compile(
    r"^(?:write|make|draft|compose|create|generate|translate|summari[sz]e|rewrite|find|search|"
    r"book|send|plan|calculate|check|fix|proofread|edit|tell\s+me\s+(?:a|an|about|some)|"
    r"give\s+me\s+(?:a|an|some|the)\b)(?!\s+(?:with|in|like|using)\b)",  # "write in Hindi"
    _I,
)
_HYPOTHETICAL = re.compile(
    r"\bif\s+(?:you|u)\s+(?:were|was)\b|\bif\s+i\s+were\b|\bwould\s+(?:you|u)\s+rather\b|"
    r"\bwhat\s+would\s+(?:you|u)\b|\bin\s+my\s+(?:shoes|place)\b",
    _I,
)
_FOR_NOW = re.compile(
    r"\b(?:for\s+now|right\s+now|this\s+time|just\s+this|of\s+(?:that|this|it)|today|tonight|"
    r"at\s+the\s+moment|atm)\b",
    _I,
)
_STATEMENT = re.compile(r"^(?:I|my|we|our)\b", _I)
_NAME_FINE = re.compile(
    r"^(?P<name>(?-i:[A-Z][a-z]+))\s+(?:is\s+(?:fine|good|great|ok|okay|perfect)|works|will\s+do)\b"
    r"(?=.*\b(?:use|call|address|talk\s+to\s+me|with\s+me)\b)",
    _I,
)
_WITHDRAW = re.compile(
    r"(?:forget|ignore|disregard|delete|remove|erase|scrap|never\s*mind|nvm)\b", _I
)
_LASTING = re.compile(
    r"\b(?:from\s+now|frm\s+now|now\s+on|going\s+forward|from\s+here|onwards?|"
    r"(?:in|for)\s+(?:the\s+)?future|every\s+time|each\s+time|whenever|in\s+all|all\s+future|"
    r"any\s+(?:\w+\s+)?(?:maths|math|code|formulas?|equations?|numbers|dates|amounts|prices))\b",
    _I,
)
#: Words without which a message asks nothing of the assistant for good: it says the
#: request stands, or it is about answering this person. A cue only, read on the request
#: path: a message with one may hold a standing request the rules missed, so the
#: extraction worker's steering reader reads it.
MAY_ASK = re.compile(
    r"\b(?:from\s+now|now\s+on|going\s+forward|onwards?|future|always|alwys|never|ever|"
    r"every\s*time|each\s+time|any\s*time|whenever|next\s+time|with\s+me|for\s+me|to\s+me|"
    r"call\s+me|address\s+me|my\s+name|no\s+more|any\s*more|stop|avoid|skip|steer\s+clear|"
    r"keep\s+(?:it|things|answers|replies|your)|answers?|replies|responses|explain\w*|tables?|"
    r"bullets?|markdown|headings?|emojis?|jargon|format\w*|language|units?|metric|imperial|"
    r"celsius|fahrenheit|tone|formal|casual|brief|concise|short|shorter|detailed|level)\b",
    _I,
)
# A task for this turn, not a standing wish: an object to work on.
_TASK = re.compile(
    r"^\w+\s+(?:\w+\s+){0,2}?(?<!like\s)(?:this|that|it|these|those|the\s+following|below|above|"
    r"attached|my\s+(?:essay|email|letter|code|cv|resume|text|draft|paragraph|message|post))\b"
    r"(?!\s+(?:way|style|tone|level|you|u|i)\b)",  # "prefer that you": no object
    _I,
)


#: Where a request may begin inside a sentence: "I have a fear of flying, so in all
#: future suggestions avoid flights"; "I'm a sparky so you don't need to dumb it down".
_PARTS = re.compile(
    r"\s*(?:[,;:\u2014\u2013]|\s-\s)\s*(?:(?:so|and|but|then)\s+)?|\s+so\s+"
    r"|\s+(?=(?:can|could|would|will)\s+(?:you|u)\b)|\s+(?=(?:please|pls|kindly)\b)",
    _I,
)


def directive(sentence: str, stands: bool | None = None) -> tuple[str, bool] | None:
    """The words of a standing request to the assistant in ``sentence`` (the opener
    taken off: "keep your replies short from now on") and whether it asks for less of
    something ("you don't need to dumb it down": ``True``); None when the sentence is
    no such request. The whole sentence is tried first, then from each of its breaks.
    ``stands``: a sentence this part came from says it stands ("from now on keep it
    short and use bullets": the bullets stand too)."""
    stands = stands or _STANDS.search(sentence) is not None
    if TRANSIENT.search(sentence) and not _LASTING.search(sentence):
        return None  # "I'm in a meeting, give me the short version": this turn's
    found = _request(sentence, stands)
    if found is None:
        for m in _PARTS.finditer(sentence):
            found = _request(sentence[m.end() :], stands, sentence)
            if found is not None:
                break
    if found is None:  # a request between two breaks: "ok so, 3 bullets max pls, I'm tired"
        for piece in _PARTS.split(sentence)[:-1]:
            found = (
                _request(piece, stands, sentence) if piece and len(piece) < len(sentence) else None
            )
            if found is not None:
                break
    if found is None and (named := _NAME_FINE.match(sentence)) is not None:
        found = (f"call me {named['name']}", False)  # "Alex is fine, use that with me"
    return found


def stands(sentence: str) -> bool:
    """Whether ``sentence`` says its request stands (from now on, always, in future)."""
    return _STANDS.search(sentence) is not None


def about_answering(sentence: str) -> bool:
    """Whether ``sentence`` speaks of how the assistant is to answer this person ("do
    steer clear of football with me", "next time reply me shorter can", "when you're
    answering me"): a task's words in it are then a manner, not a task."""
    return _TO_ME.search(sentence) is not None


_TO_ME = re.compile(
    r"\b(?:(?:reply|respond|answer|talk|speak|chat)\w*\s+(?:back\s+)?(?:to\s+|with\s+)?me\b"
    r"(?!\s+(?:through|this|that|these|those|a|an|the|about)\b)|write\w*\s+(?:back\s+)?to\s+me\b|"
    r"(?:answers?|replies|responses)\s+to\s+me\b|(?<!bear\s)(?:with|w/|wi'?)\s+me\b|"
    r"(?:call|address)\s+me\b|next\s+time\b)",
    _I,
)


def _request(sentence: str, stands: bool, whole: str = "") -> tuple[str, bool] | None:
    text = _FILLER.sub("", sentence.strip()).strip(" ,;:.!?\u2014\u2013-")
    if len(text) < 6:
        return None
    negative = _NEGATIVE.match(text)
    if negative:
        words, less = negative["v"], True
    elif prefer := _PREFER.match(text) or _WISH.match(text):
        words, less = prefer["v"], False
    elif asked := _ASK.match(text):
        words = next(v for v in asked.groupdict().values() if v)
        less = False
        words = re.sub(r"^(?:please|pls|kindly|just|also)\s+", "", words, flags=_I)
    elif imperative := _IMPERATIVE.match(text):
        words, less = imperative["v"], False
    elif terse := (_TERSE.match(text) or _FOR_ME.match(text) or _FORMATISH.match(text)):
        words, less = f"use {terse['v'][0].lower()}{terse['v'][1:]}", False  # use no markdown
    elif lang := _LANG_ONLY.match(text):  # "Mandarin only, please"
        words, less = f"answer in {lang['lang']}", False
    else:
        return None
    words = words.strip(" ,;:.!?")
    if len(words) < 4:
        return None
    if _TASK_VERB.match(words) and not (_LASTING.search(sentence) or _ABOUT_ANSWERS.match(words)):
        return None
    if _WITHDRAW.match(words):  # "forget about Lena": a retraction's, not a request
        return None
    if _HYPOTHETICAL.search(sentence):  # "would you always pick it if you were me?"
        return None
    if _FOR_NOW.search(sentence) and not _LASTING.search(sentence):  # "the short version for now"
        return None
    manner = bool(_MANNER.search(text) or _MANNER.search(words)) and _TASK.search(words) is None
    evident = _TERSE.match(text) or _FOR_ME.match(text) or _FORMATISH.match(text)
    if evident and whole and _STATEMENT.match(whole):
        return None  # "I prefer long, detailed answers": the statement's, read as one
    if not (stands or manner or evident or _LANG_ONLY.match(text)):
        return None
    return words, less


def one_off(sentence: str) -> bool:
    """Whether ``sentence`` asks for a task on this turn's object ("can you punch it up a
    bit", "write me a cover letter") and says nothing of it standing."""
    if _STANDS.search(sentence) or _EVER.search(sentence):  # "pls use that if u ever ..."
        return False
    found = _ASK.match(sentence.strip().rstrip("?!. "))
    words = next((g for g in found.groups() if g), sentence) if found else sentence
    later = _LATER_ASK.search(sentence)  # "my english is meh, can u check this email"
    return any(
        _TASK.search(w) or _TASK_VERB.match(w) for w in (words, later["w"] if later else "") if w
    )


_EVER = re.compile(r"\b(?:ever|next\s+time|anytime|any\s+time)\b", _I)
_LATER_ASK = re.compile(
    r"\b(?:can|could|would|will|pls|please)\s+(?:(?:you|u|ya)\s+)?(?:please\s+|pls\s+)?(?P<w>\w.+)",
    _I,
)

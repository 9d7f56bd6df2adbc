"""From a message to the clauses that may state a fact about its author.

Everything that is not the user speaking for themselves is cut here, before any rule
runs: memoryd's own injected block, code, quoted speech, text handed over for a task
("Translate: I love you"), reported speech, questions, hypotheticals and hedges. The
rules then only see short declarative clauses, which keeps them simple and precise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryd.core.extraction.leaders import IF, STANDING_REQUEST, STILL, TRANSIENT, strip_leader
from memoryd.core.extraction.lists import Listed, is_label, parse, statements
from memoryd.core.extraction.subject import restore
from memoryd.core.extraction.typos import correct

MAX_INPUT_CHARS = 64 * 1024
#: Longer clauses are prose, not statements of fact; also bounds every rule's work.
MAX_CLAUSE_CHARS = 320

# Lines and blocks memoryd itself injects; extracting from them would feed memories
# back in (both the old one-line form and the framed <memories> block).
_GUARD_LINE = re.compile(r"^[ \t]*Memory context\b.*$", re.MULTILINE)
_GUARD_BLOCK = re.compile(r"<memories>.*?(?:</memories>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.DOTALL)
_CODE_LINE = re.compile(
    r"^\s*(?:#|//|/\*|\*|--|\$ |>>>|>|<|\{|\}|@|def |class |import |from \S+ import|"
    r"function |const |let |var |return |print\(|console\.|echo |SELECT |INSERT |"
    r"\d{4}-\d\d-\d\d[ T]\d|Traceback|File \"|  File |\w+Error\b|\w+Exception\b|"
    r"at \S+\(|\s{4}|\t)"
    r"|[;{}]\s*$|\w\(.*\)\s*;?\s*$|^\s*\w+\s*=\s*\S|^\s{2,}[\w-]+:(?:\s|$)|^[\w-]+:\s*$",
    re.IGNORECASE,
)
_QUOTE = re.compile(
    r"\"[^\"\n]{0,400}\"|\u201c[^\u201d\n]{0,400}\u201d|\u201e[^\u201c\u201d\n]{0,400}[\u201c\u201d]"
    r"|\u00ab[^\u00bb\n]{0,400}\u00bb|`[^`\n]{0,400}`|\u2018[^\u2019\n]{0,400}\u2019(?!\w)"
    r"|(?<![\w'])'(?=\S)[^'\n]{0,400}(?<=[^\s\\])'(?![\w'])"
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd)\b|\b(?:my|me|we|our|mine)\b", re.I)

_ABBREV = re.compile(
    r"\b(?:mr|mrs|ms|dr|prof|st|jr|sr|vs|etc|e\.g|i\.e|approx|no|mt|ft|inc|ltd|co|"
    r"jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|a\.m|p\.m|u\.s|u\.k)\.$",
    re.IGNORECASE,
)
# A sentence ends at . ! ? ; : (or their CJK forms) followed by space or the end, or at
# a line break. A dot between word characters (Next.js, v2.1) does not end it.
_SENTENCE_END = re.compile(
    r"[.!?;\u3002\uff01\uff1f\uff1b]+(?=\s|$)|\n+|\u3002"
    r"|[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50\u2705]+[\ufe0f\u200d]*"
    r"|:(?=\s*$|\s+(?:(?i:I|my|we|our|can|could|would|what|how|why|please|is|are|do|"
    r"does|any|which|where|who|when|should|help|me|us|respond|reply|answer|use|keep|"
    r"write|avoid|always|never|no|don't|do\s+not)\b|[\"'\u201c\u2026]))"
)

_TASK_PREFIX = (
    r"^(?:(?:please|pls|kindly|ok|okay|now|hey|hi|so|and|also|then|can you|could you|"
    r"would you|will you|help me|i need you to|i want you to|i'd like you to|"
    r"i would like you to|let's|lets|quickly|just)\s+)*"
)
# Tasks whose material follows: nothing after them in the message is the user's life.
_PAYLOAD = re.compile(
    _TASK_PREFIX + r"(?:translate|summari[sz]e|tl;?dr|rewrite|re-write|rephrase|"
    r"paraphrase|proofread|proof-read|correct|fix|edit|polish|improve|shorten|expand|"
    r"continue|complete|finish|respond to|reply to|answer this|analy[sz]e|convert|"
    r"format|extract|classify|check|grade|review|critique|spell-?check|transcribe|"
    r"turn this|turn the following|say|repeat|read this|what does|how do you say|"
    r"how would you say|how do i say|parse|tokeni[sz]e|count the|detect|identify the|"
    r"make\s+(?:this|it|the\s+following|these)|roleplay|role-play|role\s+play|pretend|"
    r"act\s+as|simulate|imagine|play\s+(?:a\s+game|the\s+role|a\s+role)|"
    r"(?:do|play|start)\s+(?:a\s+|an\s+|some\s+)?(?:roleplay|role-play|role\s+play|rp)|"
    r"(?:rp|roleplay|role-play|role\s+play)\s+time|"
    r"you\s+are\s+(?:now\s+)?(?:a|an|my)\b|you're\s+(?:a|an|my)\b)"
    r"(?![\w,!.-])",
    re.IGNORECASE,
)
# A heading over a list that is not about the writer: a character, a client, someone
# else, or the moment ("Today's status:").
_NOT_MINE = re.compile(
    r"\b(?:character|npc|campaign|d&d|dnd|client|customer|patient|colleague|"
    r"co-?worker|boss|friend|neighbou?r|cousin|mum|mom|dad|mother|father|brother|sister|"
    r"son|daughter|husband|wife|partner|his|her|their|mr|mrs|ms|dr|today|today's|tonight|"
    r"right\s+now|status)\b",
    re.IGNORECASE,
)
# Creative tasks: the sentence is skipped; with fiction cues or a colon, so is the rest.
_CREATIVE = re.compile(
    _TASK_PREFIX + r"(?:write|compose|draft|generate|create|make up|come up with|"
    r"tell me a|play the|"
    # "lets do a story where im a vet": the set-up of a make-believe, not a standing rule
    r"(?:do|start)\s+(?:a|an|another|some)\s+(?:story|role-?play|rp|scenario|adventure|"
    r"campaign|quest))"
    r"(?![\w,!.-])",
    re.IGNORECASE,
)
_FICTION_CUE = re.compile(
    r"\b(?:the following|below|in which|where the|story|stories|poem|song|lyrics|"
    r"dialogue|dialog|script|narrator|character|protagonist|essay|haiku|limerick|"
    r"fiction|novel|screenplay|monologue|example sentences?|sample sentences?|"
    r"says|saying|persona|perspective|point of view|voice of|prompt|role-?play|"
    r"scenario|game)\b",
    re.IGNORECASE,
)


# Someone other than the user speaking: everything after it is theirs.
_SPEECH = (
    r"(?:always\s+|once\s+|just\s+|keeps?\s+|kept\s+|also\s+|never\s+|often\s+)?"
    r"(?:said|says|say|saying|told|tells|wrote|writes|asked|asks|claims?|claimed|"
    r"thinks|thought|believes|believed|mentioned|mentions|replied|replies|texted|"
    r"posted|tweeted|yelled|shouted|whispered|insists|insisted|swears|swore|"
    r"declared|declares|announced|announces|admitted|admits|explained|explains)\b"
)
_REPORTED_CONTENT = (
    r"(?=\s*,?\s*(?::|\u2026|that\b|(?i:I|she|he|they|we|my|her|his|their|it|you|me|to\s+me|us)\b))"
)
_REPORTED = re.compile(
    r"(?i:\b(?:he|she|they|someone|somebody|everyone|everybody|people|nobody|"
    r"(?:my|his|her|their|a|the|our)\s+[\w-]+(?:\s+[\w-]+)?)\s+"
    + _SPEECH
    + ")"
    + _REPORTED_CONTENT
    + r"|\b(?i:she|he|they)\s+"
    + _SPEECH
    + r"|\b(?-i:[A-Z][a-z]+)\s+"
    + _SPEECH
    + _REPORTED_CONTENT
)
#: A clinician's word about the person is how people tell their own conditions ("Doctor
#: told me I'm pre-diabetic", "the physio said I have tendonitis in my knee"): the words
#: after it are read as the person's, when they are about the person.
_TOLD_BY_CLINICIAN = re.compile(
    r"^(?:(?:my|the|our|a|me)\s+)?(?:doctor|doc|dr|gp|physio\w*|dentist|consultant|specialist|"
    r"nurse|cardiologist|surgeon|optician|optometrist|dietitian|dietician|nutritionist|midwife|"
    r"p(?:a)?ediatrician|psychiatrist|allergist|dermatologist|neurologist|oncologist|"
    r"rheumatologist|endocrinologist|obstetrician|gynae?cologist|hospital|clinic)s?\s+"
    r"(?:has\s+|have\s+|just\s+|also\s+|finally\s+)?(?:said|says|say|told|tells|tell|"
    r"confirmed|confirms|reckons|thinks|found|diagnosed)\s+(?:me\s+)?(?:that\s+)?"
    r"(?P<c>(?:i\b|i'|my\b).+)$",
    re.IGNORECASE,
)
_HYPOTHETICAL_SENTENCE = re.compile(
    r"^according\s+to\b|\b(?:imagine|imagining|suppose|supposing|pretend|pretending|hypothetically|"
    r"what if|let's say|lets say|say that|in a world|in an alternate|in another life|"
    r"if only|role-?play|i\s+wish\s+i\s+(?:could|was|were|had|lived|did))\b",
    re.IGNORECASE,
)


def hypothetical(sentence: str) -> bool:
    """Whether ``sentence`` opens by imagining or supposing ("Imagine for a second I was
    a beginner"), rather than stating or asking."""
    return _SUPPOSING.match(sentence) is not None


_SUPPOSING = re.compile(
    r"^\W*(?:\w+\W+){0,2}?(?:imagine|suppose|supposing|what\s+if|let'?s\s+say|say\s+that|"
    r"hypothetically|in\s+a\s+world)\b",
    re.IGNORECASE,
)


_HYPOTHETICAL = re.compile(
    r"^(?:if|unless|whether|even\s+if|only\s+if|in\s+case)\b"
    r"|^(?:\S+\s+){0,3}(?:would|could|might|should|ought|may|maybe|perhaps|probably|"
    r"possibly)\b"
    r"|\b(?:wish|wished|someday|some\s+day|hypothetically|were\s+I)\b"
    # "one day I'll ..." dreams; "three in one day" counts
    r"|(?<!\bin\s)(?<!\bper\s)(?<!\ba\s)(?<!\beach\s)(?<!\bevery\s)\bone\s+day\b",
    re.IGNORECASE,
)
_WH = re.compile(r"^(?:when|where)\b", re.IGNORECASE)
_QUESTION = re.compile(
    r"^(?:so\s+|and\s+|but\s+|also\s+|ok\s+|okay\s+|hey\s+|hi\s+|quick question:?\s+)*"
    r"(?:what|what's|whats|how|how's|hows|why|where's|wheres|who|who's|whos|whom|whose|which|"
    r"can|could|would|should|will|won't|shall|do(?!\s+not)|does(?!\s+not)|did(?!\s+not)|"
    r"is|isn't|are|aren't|am|was|wasn't|were|weren't|have|has|had|haven't|hasn't|may|"
    r"might|must|any|anyone|anybody|anything|is there|are there|wanna|want to|"
    r"got any|know any)\b",
    re.IGNORECASE,
)
# Clauses that start a new statement inside a sentence: split before them.
_CLAUSE_START = (
    r"(?:I|I'm|I've|I'll|I'd|i|i'm|i've|my|My|we|We|we're|our|Our|since|because|"
    r"but|so|although|though|while|whereas|plus|also|and|if|unless|when|can\s+you|"
    r"could\s+you|would\s+you|will\s+you|what|how|why|where|who|which|any|please|also|"
    r"(?:is|are|do|does|did|was|can|could|would|will)\s+(?:that|this|it|there|you|I|he|"
    r"she|they|we)|(?:it|she|he|they|his|her|its|their)\s+(?:is|are|was|has|name)|"
    r"always|never|no|now|otherwise|"
    r"(?:[A-Z][a-z]+\s+){0,2}(?:please|pls))\b"
)
_CLAUSE_SPLIT = re.compile(
    rf",\s+(?={_CLAUSE_START})|\s+(?:and|but|so|plus|or|whereas|while|because|since|"
    r"then)\s+(?=(?i:I|I'm|I've|I'll|I'd|my|we|we're|our|please|no|always|never)\b)"
    r"|\s+but\s+|\s+[\u2014\u2013-]+\s+(?=(?i:I|I'm|I am|my|we|our|and\s+I|so\s+I|please)\b)"
)
# "I live in Madrid and work at Bosch": a verb after "and" continues the subject.
_CARRY = re.compile(
    r"\s+(?:and|but)\s+(?=(?:also\s+|now\s+|currently\s+)?(?:work|live|have|use|speak|"
    r"play|study|love|like|enjoy|hate|own|drive|prefer|go|am|teach|run|do|practice|"
    r"practise|volunteer|write|cook|bake|read|collect|just|recently|moved|grew|"
    r"studied|worked|lived|got|started|joined|switched|hope|plan|want|need|can't|"
    r"cannot|don't|never|always|usually|often|rarely|installed|adopted|bought|"
    r"co-parent|see|take|carry|keep|eat|drink|ride|teach|coach|train|support)\b)",
    re.IGNORECASE,
)
_COMPOUND = re.compile(
    r"\bme\s+and\s+(?:my|our)\s+[\w-]+\s+(?=\w)|\b(?:my|our)\s+[\w-]+\s+and\s+me\s+(?=\w)|"
    r"\b(?:my|our)\s+(?-i:[a-z][\w-]*)(?:\s+(?-i:[a-z][\w-]*))?\s+and\s+I\s+"
    r"(?=are|were|have|both|all|live|love|share)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Clause:
    text: str
    question: bool  # the sentence it came from ends with "?"
    listed: Listed | None = None  # the labelled list it is an item of ("Likes: ...")
    item: str = ""  # that item as written
    still: bool = False  # it restates ("still", "as I said"): the same fact, not a new one


#: A longer message is a document the user pasted: statements about themselves sit at
#: its start or end, so only these windows are read (bounds the work per message).
WINDOW_CHARS = 4 * 1024
#: Clauses read per window, for the same reason: a message with more than this in its
#: first (or last) 4 KiB is a document, not someone talking about themselves.
MAX_CLAUSES = 40


_BLANKS = re.compile(r"(?<=\S)[^\S\n]{2,}")  # inside a line; indentation marks code


def strip_injected(text: str) -> str:
    """``text`` without memoryd's own memory block (framed or the old one-line form)."""
    return _GUARD_LINE.sub("", _GUARD_BLOCK.sub("\n", text))


def windows(text: str) -> list[str]:
    """The last MAX_INPUT_CHARS characters without memoryd's own block, and of those
    the first and last WINDOW_CHARS when the message is longer than both."""
    if len(text) > MAX_INPUT_CHARS:
        cut = len(text) - MAX_INPUT_CHARS
        # The cut may land inside an injected line whose "Memory context" is now gone.
        guarded = _GUARD_LINE.match(text, text.rfind("\n", 0, cut) + 1) is not None
        text = text[cut:]
        if guarded:
            newline = text.find("\n")
            text = "" if newline < 0 else text[newline:]
    # a lone surrogate ("\ud800" is valid JSON) cannot be stored as UTF-8
    text = text.encode("utf-8", "replace").decode("utf-8")
    # runs of blanks become one (every "\s+X" pattern would otherwise rescan a long run)
    text = _BLANKS.sub(" ", text.replace("\r", ""))
    text = _GUARD_BLOCK.sub("\n", text)
    text = _GUARD_LINE.sub("", text)
    text = _FENCE.sub("\n", text)
    if len(text) <= 2 * WINDOW_CHARS:
        return [text]
    head, tail = text[:WINDOW_CHARS], text[-WINDOW_CHARS:]
    cut = max(head.rfind("\n"), head.rfind(". "))
    head = head[: cut + 1] if cut > WINDOW_CHARS // 2 else head
    starts = [i for i in (tail.find("\n"), tail.find(". ")) if 0 <= i < WINDOW_CHARS // 2]
    return [head, tail[min(starts) + 1 :] if starts else tail]


def prepare(text: str) -> str:
    """One window as plain statements: no code, no quoted speech, one spelling."""
    text = text.replace("\u2019", "'").replace("\u02bc", "'")
    text = correct(expand(text))
    text = "\n".join(line for line in text.split("\n") if not _CODE_LINE.search(line))
    return _QUOTE.sub(_unquote, text)


_CONTRACTIONS = {
    "i'm": "I am",
    "im": "I am",
    "i've": "I have",
    "ive": "I have",
    "i'll": "I will",
    "i'd": "I would",
    "i": "I",
    "we're": "we are",
    "we've": "we have",
    "we'll": "we will",
    "we'd": "we would",
    "it's": "it is",
    "she's": "she is",
    "he's": "he is",
    "that's": "that is",
    "don't": "do not",
    "dont": "do not",
    "doesn't": "does not",
    "doesnt": "does not",
    "didn't": "did not",
    "didnt": "did not",
    "can't": "cannot",
    "cant": "cannot",
    "won't": "will not",
    "wont": "will not",
    "isn't": "is not",
    "aren't": "are not",
    "wasn't": "was not",
    "haven't": "have not",
    "havent": "have not",
    "hasn't": "has not",
    "couldn't": "could not",
    "wouldn't": "would not",
    "shouldn't": "should not",
}
_CONTRACTION = re.compile(
    r"(?<!\w)(?:" + "|".join(re.escape(k) for k in _CONTRACTIONS) + r")(?![\w'])",
    re.IGNORECASE,
)


def expand(text: str) -> str:
    """One spelling per form ("I'm", "Im", "i'm" -> "I am"; "dont" -> "do not"), so the
    rules need one pattern, and stray apostrophes cannot pass for quotes."""

    def swap(m: re.Match[str]) -> str:
        word = m[0]
        if word.lower() in ("im", "ive", "cant", "wont", "i") and word not in (
            "Im",
            "im",
            "Ive",
            "ive",
            "cant",
            "wont",
            "i",
            "Cant",
            "Wont",
        ):
            return word
        out = _CONTRACTIONS.get(word.lower())  # "İ".lower() is two characters
        if out is None:
            return word
        return out[0].upper() + out[1:] if word[0].isupper() and out[0] != "I" else out

    text = _CONTRACTION.sub(swap, text)
    if "'s " not in text:
        return text
    text = _POSSESSIVE_HAS.sub(r"\g<who> has been", text)
    return _POSSESSIVE_IS.sub(r"\g<who> is \g<verb>", text)


#: "my cat's called Vegemite", "the baby's due in May": a noun's "'s" before a verb
_POSSESSIVE_HAS = re.compile(r"(?P<who>\b[A-Za-z]+)'s\s+been\b")
_POSSESSIVE_IS = re.compile(
    r"(?P<who>\b[A-Za-z]+)'s\s+(?P<verb>called|named|due|been|going|getting|moving|"
    r"starting|now|still|off|back|allergic|vegan|vegetarian|a|an|"
    r"doing|living|working|studying)\b"
)


def _unquote(m: re.Match[str]) -> str:
    """Quoted first-person words are someone else's (or a task's) speech: dropped.
    Other quotes only mark a name ("my dog 'Rex'") and keep their text."""
    inner = m[0][1:-1]
    if _FIRST_PERSON.search(inner) or m[0][0] == "`":
        return " \u2026 "
    return inner


def sentences(text: str) -> list[tuple[str, str]]:
    """(sentence, terminator) pairs; abbreviations such as "Dr." do not end one."""
    out: list[tuple[str, str]] = []
    start = 0
    for m in _SENTENCE_END.finditer(text):
        chunk = text[start : m.start()]
        if m[0] == "." and _ABBREV.search(chunk + "."):
            continue
        out.append((chunk, m[0].strip()))
        start = m.end()
    out.append((text[start:], ""))
    return [(s.strip(), end) for s, end in out if s.strip()]


_STANDING_WORD = re.compile(r"\b(?:now|here|forward|future|default|time)\b", re.IGNORECASE)
_STANDING_CUE = re.compile(
    r"\b(?:from\s+now\s+on|from\s+here(?:\s+on)?(?:\s+out)?|going\s+forward|(?:from\s+)?now\s+onwards?|"
    r"in\s+future|by\s+default|every\s+time|for\s+all\s+future)\s*[.!]?$",
    re.IGNORECASE,
)


def task(sentence: str, end: str) -> str | None:
    """ "payload" when the rest of the message is material for a task, "creative" when
    only this sentence is a request to make something up, else None."""
    if _STANDING_WORD.search(sentence) and _STANDING_CUE.search(sentence):
        return None  # "continue in English from here on" sets how to answer, it is no task
    if _PAYLOAD.match(sentence) or (end == ":" and _FICTION_CUE.search(sentence)):
        return "payload"
    if _CREATIVE.match(sentence):
        return "payload" if end == ":" or _FICTION_CUE.search(sentence) else "creative"
    return None


def clauses(text: str) -> list[Clause]:
    """The candidate clauses of a message, in order, minus everything that is not the
    user stating something: see the module docstring."""
    out: list[Clause] = []
    label = ""  # a list's label that ended a sentence of its own ("Dietary stuff:")
    for raw, end in sentences(text):
        if label:
            raw, label = f"{label}: {raw}", ""
        if (end == ":" or raw.rstrip().endswith(":")) and _NOT_MINE.search(raw):
            break  # "Character sheet for my campaign:", "Notes on the client:": not theirs
        if end == ":" and is_label(raw):
            label = raw
            continue
        listed = parse(raw) if ":" in raw or "-" in raw else None
        if listed is not None and "?" not in end:  # "About me: 34, live in Seoul, ..."
            for item, statement in zip(listed.items, statements(listed), strict=False):
                out.append(Clause(restore(statement), False, listed, item))
            continue
        restates = STILL.match(raw) is not None
        sentence = strip_leader(raw)
        kind = task(sentence, end)
        if kind == "payload":
            break  # what follows is the task's material, not the user's life
        if kind == "creative" or _HYPOTHETICAL_SENTENCE.search(sentence):
            continue
        told = _TOLD_BY_CLINICIAN.match(sentence)
        if told:  # "my GP says my cholesterol is high": the person's own condition
            sentence = told["c"]
        reported = _REPORTED.search(sentence)
        if reported:
            sentence = sentence[: reported.start()]
        question = "?" in end
        sentence = _CARRY.sub(", I ", _COMPOUND.sub("we ", sentence))
        after_question = False
        for part in _CLAUSE_SPLIT.split(sentence):
            # "Still playing the tabla": the same fact again
            still = restates or STILL.match(part) is not None
            part = strip_leader(part.strip(" ,;:-\u2026"))
            if len(part) > MAX_CLAUSE_CHARS:
                part = _last_statement(part)
            if not part:
                continue
            # "can you always use metric?" sets an instruction; "... if you were me?" not
            standing = STANDING_REQUEST.match(part) and not IF.search(part)
            if not standing and (_QUESTION.match(part) or (question and _WH.match(part))):
                after_question = True
                continue
            if question and re.match(r"no\s", part, re.IGNORECASE):  # "rice or no rice??"
                after_question = True
                continue
            if after_question and not part.lower().startswith(("i ", "i'", "my ", "we")):
                continue
            if _HYPOTHETICAL.search(part) and not (standing or _INSTRUCTION_OK.match(part)):
                continue
            if TRANSIENT.match(part):  # "I'm sitting in a café", "my flight is delayed"
                continue
            out.append(Clause(restore(part), question, still=still))
    return out


#: A polite question that sets a standing instruction is one: "Can you always give
#: temperatures in Celsius?", "Could you stop using emojis from now on?"
_INSTRUCTION_OK = re.compile(
    r"^(?:I would (?:like|prefer|love) (?:you|it if you|answers|responses|replies)"
    r"|I would (?:rather|much rather|prefer) (?:that |if )?you\b"
    r"|I would (?:like|love) to (?!know|ask|see|get|have|check|understand|find|try|make|"
    r"confirm|order|book|buy|cancel|change|add|remove|start|begin|share|show|discuss|talk|"
    r"go over|create|write|draft|generate|build|fix|convert|compare|be\b))",
    re.IGNORECASE,
)
# Casual statements drop their subject ("Grew up in Lyon", "Currently working as a chef").
_LAST_I = re.compile(r".*\b(?=(?:I|my|My|We|we|Our|our)\s)", re.DOTALL)


def _last_statement(part: str) -> str:
    """Of a run-on clause, the part from its last first-person start, if short enough."""
    tail = part[-MAX_CLAUSE_CHARS:]
    m = _LAST_I.match(tail)
    return tail[m.end() :] if m and m.end() > 0 else ""

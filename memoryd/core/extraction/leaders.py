"""What chat puts before a statement and what it leaves out: discourse markers and
time or topic leaders ("Actually,", "Since March", "Change on prices,"), a dropped "I"
or "I am" ("Just finished my first week at ...", "On keto at the moment"), moments that
are not facts ("I'm sitting in a café"), restatements ("Still ...") and polite
questions that set a standing instruction. ``segment`` applies them clause by clause.
"""

from __future__ import annotations

import re

__all__ = [
    "IF",
    "STANDING_REQUEST",
    "STILL",
    "TRANSIENT",
    "strip_leader",
]

_LEADER = re.compile(
    r"^(?:(?:oh|ah|well|so|also|and|but|ok|okay|yeah|yes|no(?=\s*[,!.])|nope|hey|hi|hello|btw|fyi|ps|"
    r"p\.s\.|actually|anyway|anyways|now|then|just|plus|lol|haha|honestly|"
    r"by the way|as i said|as i mentioned|like i said|as mentioned|for context|"
    r"i\s+(?:should|ought\s+to|must|have\s+to|need\s+to|want\s+to|will)\s+"
    r"(?:mention|say|tell\s+you|add|note|point\s+out)(?:\s+that)?|"
    r"for the record|just so you know|for your information|for reference|"
    r"quick note|note|reminder|update|side note|fun fact|heads up|in case it matters|"
    r"in case you need to know|context|background|about me|info|remember|"
    r"please remember|keep in mind|note that|remember that|please note|don't forget|"
    r"bear in mind|you should know|you know|i think|i guess|i believe|i suppose|"
    r"i mean|to be honest|tbh|fwiw|since|because|as|given that|seeing as|now that|"
    r"these days|nowadays|currently|at the moment|right now|lately|recently|"
    r"basically|personally|also worth mentioning|one more thing|oh and|and also|"
    r"that said|otherwise|though|although|however|in fact|incidentally|"
    r"first of all|firstly|secondly|finally|lastly|again|still|yep|yup|sure|"
    r"thanks|thank you|cool|great|nice|good|perfect|awesome|turns out|it turns out|"
    r"funny enough|sadly|unfortunately|luckily|fortunately|anyhow|long story short|"
    r"these days|in short|as of now|as of today|as of this year|since last \w+|"
    r"hmm|um|uh|wow|omg|ugh|yay|oh well|right|so yeah|also fyi|quick one|quick q|"
    r"real quick|quick question|question|hi there|hello there|hey there|"
    r"good morning|good evening|morning|evening|by profession|by trade|professionally|"
    r"a bit about me|some background|bit of context|before my question|"
    r"(?:infra|tech|stack|work|money|health|diet|location)-wise|correction|update|"
    r"heads up|big news|update|fyi|context|for context|background|about me|"
    r"before you plan[^:,]*|before we start|a few rules)\b[\s,:;!.\-]*"
    r"|[-\u2022*>]+\s+|\d+[.)]\s+)+",
    re.IGNORECASE,
)


#: A moment, not a fact: what the user is doing right now, or a one-off mishap.
TRANSIENT = re.compile(
    r"^(?:I\s+am|we\s+are)\s+(?:just\s+|currently\s+|now\s+|still\s+)?(?:sitting\s+(?:in|at|on|here|there|"
    r"outside|by|with|around)|standing|waiting|"
    r"stuck|lying|typing|queuing|queueing|sat|stood|parked|on\s+hold|on\s+the\s+(?:train|bus|"
    r"phone|way|tube|plane|road)|in\s+(?:a|the)\s+(?:meeting|queue|line|call|lift|elevator|"
    r"taxi|uber|car|airport|waiting\s+room)|in\s+(?:a\s+|the\s+|my\s+)?(?:\w+\s+)?(?:car|taxi|cab|"
    r"uber|grab|ola|bus|train|plane|airport|queue|traffic)\b|overthinking|overreacting|losing\s+it|"
    r"going\s+mad|being\s+(?:silly|paranoid|dramatic)|not\s+sure|unsure|wondering|confused|trying\s+to\s+"
    r"(?:decide|figure|work\s+out|understand))\b"
    r"|^my\s+(?:flight|train|bus|meeting|order|package|parcel|delivery|internet|wifi|wi-fi|"
    r"battery|connection|call|appointment|taxi|uber|lift)\s+(?:is|was|has\s+been|got|keeps)\s+"
    r"(?:delayed|late|cancell?ed|stuck|down|broken|dead|slow|lost|dropping|running\s+late)\b"
    r"|^I\s+have\s+(?:just\s+)?(?:spilled|spilt|dropped|broken|lost|forgotten|missed|burnt|burned)\s+"
    r"(?:my\s+|the\s+|a\s+|some\s+)?(?:tea|coffee|water|keys|phone|train|bus|flight|wallet|"
    r"password|dinner|toast|bag|glasses)",
    re.IGNORECASE,
)
STILL = re.compile(
    r"^\s*(?:(?:yeah|yes|yep|ok|and|so)\s*,?\s+)?(?:still|as\s+(?:I\s+)?(?:said|told|mentioned)|"
    r"same\s+as\s+before|again|like\s+I\s+said)\b",
    re.IGNORECASE,
)
STANDING_REQUEST = re.compile(
    r"^(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|pls\s+|ever\s+)?"
    r"(?:(?:always|never|from\s+now\s+on|in\s+future|going\s+forward)\b|"
    r"(?:stop|drop|quit)\s+(?:using|the|with|adding|giving)\b|"
    r"(?:just\s+)?(?:call\s+me|switch\s+(?:me\s+)?to|talk\s+to\s+me|keep\s+(?:it|your|the\s+answers))\b|"
    r".{0,60}\b(?:from\s+now\s+on|going\s+forward|in\s+future|every\s+time|anymore)\b)",
    re.IGNORECASE,
)
IF = re.compile(r"\b(?:if|were|rather|unless|suppose|imagine)\b", re.IGNORECASE)


def strip_leader(part: str) -> str:
    """Drop discourse markers ("Actually,", "btw", "As I said,") before the clause, and
    give a chat clause that dropped its subject ("Just finished my first week at Auto
    Trader", "wiped the drive and put fedora on it") its "I" back."""
    for leader in (_WHEN_LEADER, _ABOUT_LEADER):
        m = leader.match(part)
        if m is not None:
            part = part[m.end() :].strip(" ,;:-") or part
    stripped = _LEADER.sub("", part, count=1).strip(" ,;:-")
    stripped = stripped or part
    if _DROPPED_SUBJECT.match(stripped) or _DROPPED_NOT.match(stripped):
        first = stripped.split()[0].lower()
        be = "I have " if first == "been" else "I am " if first.endswith("ing") else "I "
        return be + stripped[0].lower() + stripped[1:]
    if _DROPPED_AM.match(stripped):
        return "I am " + stripped[0].lower() + stripped[1:]
    if _DROPPED_OWN.match(stripped):
        return "I " + stripped[0].lower() + stripped[1:]
    return stripped


#: "Run my own tiling business", "own a small cafe": a dropped "I" before what they run
#: ("Run my script" is a request: only a business is owned)
_DROPPED_OWN = re.compile(
    r"^(?:run|own|co-own|manage)\s+(?:my\s+own|a|an|our|a\s+small)\s+(?:[\w&'-]+\s+){0,3}?"
    r"(?:business|company|firm|shop|cafe|café|salon|practice|agency|consultancy|ltd|limited)\b",
    re.IGNORECASE,
)


#: "dont drink coffee anymore", "never liked olives": the same dropped "I"
_DROPPED_NOT = re.compile(
    r"^(?:do\s+not|don't|never|no\s+longer)\s+(?:eat|drink|like|love|smoke|own|live|work|"
    r"speak|play|watch|listen|liked|loved|enjoy|enjoyed)\b",
    re.IGNORECASE,
)
#: "On keto at the moment", "Allergic to cats", "Based in Leeds": a dropped "I am"
_DROPPED_AM = re.compile(
    r"^(?:on\s+(?:a\s+|the\s+)?(?:keto|paleo|low[- ]carb|low[- ]fodmap|vegan|vegetarian|"
    r"carnivore|gluten[- ]free|dairy[- ]free|whole30|mediterranean|intermittent)\b|"
    r"(?:allergic|intolerant)\s+to\b|based\s+(?:in|out\s+of)\b|originally\s+from\b|"
    r"on\s+(?:parole|probation|bail|a\s+\S+\s+visa|an?\s+visa)\b|"
    r"married\s+(?:to|with)\b|vegan\b|vegetarian\b|pescatarian\b|"
    r"(?:a\s+)?(?:big|huge|massive|die-hard|diehard|lifelong|long-time|longtime)\s+fan\s+of\b|"
    r"on\s+(?:a|an|my)\s+(?:macbook|mac|iphone|pixel|galaxy|android|thinkpad|surface|"
    r"chromebook|windows|linux|ubuntu|fedora|dell|lenovo|samsung|oneplus)\b)",
    re.IGNORECASE,
)


#: "Change on prices, show them in dollars", "Stoked, landed a gig": a word or a topic
#: before the comma
_ABOUT_LEADER = re.compile(
    r"^(?:(?:small\s+|quick\s+|one\s+)?(?:change|update|correction|news|edit)\s+(?:on|to|re|about|"
    r"regarding)\s+[\w' -]{1,30}\s*[,:]\s+|(?:stoked|gutted|chuffed|buzzing|thrilled|excited|"
    r"yay|woohoo|finally|wow|omg|sadly|luckily|anyway|well|right|great|good\s+news|bad\s+news|"
    r"(?:ok|okay|so)\s+upgraded|upgraded|sorted|done|"
    r"big\s+news|news)\s*[,!:]+\s+)",
    re.IGNORECASE,
)
#: "Since March I am divorced", "Because of my ulcer I am not eating spicy food", "As I
#: told before, ...": a time or reason before the statement
_WHEN_LEADER = re.compile(
    r"^(?:(?:since|from|as\s+of|starting|in|after|because\s+of|due\s+to|thanks\s+to|besides|during|"
    r"apart\s+from|other\s+than|on\s+top\s+of|except\s+for|like)\s+"
    r"(?:(?:my|the|a|an|this|that|last|next|early|late|mid)\s+)?(?!(?:I|we)\b)[\w-]+"
    r"(?:\s+(?!(?:I|we)\b)[\w-]+){0,6}?\s*,?\s+"
    r"(?=(?:I|we)\s+(?:am|are|have|was|were|do|did|no\s+longer|got|moved|started|can|also|"
    r"speak|live|work)\b)|"
    r"as\s+I\s+(?:told|said|mentioned|wrote)(?:\s+(?:you|before|earlier|already))*\s*,?\s+|"
    r"I\s+(?:just\s+)?(?:found\s+out|heard|learned|learnt|realised|realized|got\s+(?:word|the\s+news))"
    r"(?:\s+[\w-]+){0,3}?\s+(?:that\s+)?(?=(?:I|my|we)\s))",
    re.IGNORECASE,
)


#: A clause opening on a verb in the past tense states what its writer did: people
#: drop the "I" in chat. Participles that open other sentences ("Based on", "Attached
#: is", "Used to") are not verbs of a dropped "I".
_DROPPED_SUBJECT = re.compile(
    r"^(?:(?:just|finally|recently|also|only|actually|officially|already)\s+)*"
    r"(?!(?:based|attached|given|compared|related|supposed|used|added|included|called|"
    r"named|needed|interested|excited|tired|bored|confused|stuck|worried|scared|married|"
    r"engaged|divorced|pleased|delighted|gutted|stressed|exhausted|shocked|surprised|"
    r"annoyed|convinced|allowed|expected|asked|embedded|nested|printed|returned|logged|"
    r"deleted|updated|edited|fixed|signed|indeed|need|speed|seed|feed|bed|red|shed|employed|"
    r"enrolled|obsessed|located|settled|diagnosed|retired|stationed|registered|qualified|"
    r"certified|trained|licensed|vaccinated|hooked|addicted|inspired|blessed)\b)"
    r"(?:(?:[a-z]{3,}ed|got|made|took|left|quit|began|bought|sold|went|found|caved|"
    r"picked|started|landed|joined|moved|switched|traded|swapped|upgraded|transferred|"
    r"became|grew|broke|fell|won|lost|met|had|spent|sent|built|gave|drove|flew|ran|"
    r"wrote|did|came|kept|sat|passed|tore|hurt|cut|put|split|shut|wore|swam|rode)\s+|"
    r"(?:been|picking|learning|studying|doing|taking|working|living|planning|training|"
    r"starting|teaching|playing|building|writing|saving|trying|finishing|spending|doing|"
    r"tramping|surfing|running|cycling|hiking|training)\s+(?=\S+\s))"
    r"(?!(?:you|it\s+is|that\s+is)\b)\S",
    re.IGNORECASE,
)

"""The ordered rule table (see ``rules`` for what each builder does).

Order matters: specific phrasings come before the general ones they would also match
("I'm allergic to" before "I'm a/an", "I'm going to use" before "I'm going to").
"""

from __future__ import annotations

import functools
import re

from memoryd.core.extraction import fields as f
from memoryd.core.extraction import instructions as ins
from memoryd.core.extraction import lexicon as lx
from memoryd.core.extraction import places
from memoryd.core.extraction import rules as r
from memoryd.core.extraction import stack as st
from memoryd.core.extraction import updates as u
from memoryd.core.extraction.rules import ADV, NAME, Build, V

_PET_WORDS = "|".join(sorted((re.escape(w) for w in lx.PETS), key=len, reverse=True))
_REL_WORDS = "|".join(sorted((re.escape(w) for w in lx.RELATIONS), key=len, reverse=True))
_DIET_WORDS = "|".join(sorted((re.escape(w) for w in lx.DIETS), key=len, reverse=True))
_STATE_WORDS = "|".join(sorted((re.escape(w) for w in lx.HEALTH_STATES), key=len, reverse=True))
_TRAIT_WORDS = "|".join(sorted((re.escape(w) for w in lx.TRAITS), key=len, reverse=True))
_ADJ = r"(?:(?:[a-z][a-z-]*)\s+){0,3}?"
_HAVE_VERB = (
    rf"(?:(?:I|we)\s+{ADV}(?:have\s+got|have|own|got|adopted|rescued|bought|purchased|"
    r"share\s+my\s+home\s+with|share\s+our\s+home\s+with|live\s+with|keep|raise|foster|"
    r"am\s+fostering|have\s+adopted|have\s+rescued|brought\s+home))"
)
SUBJ = r"(?:I|we)"
BE = r"(?:I\s+am|we\s+are|I\s+have\s+been|we\s+have\s+been)"
_NUM = r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+|my|our|some|another|a\s+second|a\s+third|a\s+new)"

Rule = tuple[str, re.Pattern[str], Build]
#: The table as written: compiling its ~300 patterns took ~0.3 s, paid by every process
#: that imported the engine (each CLI command included), so it happens on first use.
_RULES: list[tuple[str, str, Build]] = []


def rule(kind: str, pattern: str, build: Build) -> None:
    _RULES.append((kind, pattern, build))


@functools.cache
def compiled_rules() -> tuple[Rule, ...]:
    """The rules in order, compiled (once per process)."""
    return tuple((kind, re.compile(p, re.IGNORECASE), build) for kind, p, build in _RULES)


@functools.cache
def any_rule() -> re.Pattern[str] | None:
    """One pattern that matches where any rule does (their alternation, group names
    dropped), or None if it does not compile. Extraction walks ``block_rules`` instead
    (the same idea per block of 24, so a matching clause is not looked at twice); this
    whole-table form stays as the reference the tests hold the blocks' skipping to."""
    bare = (re.sub(r"\(\?P<\w+>", "(?:", p) for _, p, _ in _RULES)
    try:
        return re.compile("|".join(f"(?:{p})" for p in bare), re.IGNORECASE)
    except re.error:  # e.g. a back-reference to a name, or a global flag mid-pattern
        return None


#: Rules per block of ``block_rules``: a clause tries each block's alternation (one C
#: regex call) and walks only the blocks that can match it, in order.
BLOCK = 24


@functools.cache
def block_rules() -> tuple[tuple[re.Pattern[str] | None, tuple[Rule, ...]], ...]:
    """The rules in order, in blocks of ``BLOCK`` with each block's alternation (None
    when it does not compile: then the block is walked rule by rule). With ~370 rules a
    clause the union accepts walked them all from Python; the blocks skip most of them."""
    rules = compiled_rules()
    out = []
    for start in range(0, len(rules), BLOCK):
        block = rules[start : start + BLOCK]
        bare = (re.sub(r"\(\?P<\w+>", "(?:", p) for _, p, _ in _RULES[start : start + BLOCK])
        try:
            union: re.Pattern[str] | None = re.compile(
                "|".join(f"(?:{p})" for p in bare), re.IGNORECASE
            )
        except re.error:
            union = None
        out.append((union, block))
    return tuple(out)


def _simple(kind: str, slot: str, **kw: bool) -> Build:
    return r.simple(kind, slot, **kw)


# -- labelled fields ("Name: Wayra", "Current role: UX researcher, Mercado Libre") ------
rule("fields", r"^(?:my\s+)?(?P<field>[a-z][\w /'-]{1,30}?)\s*(?::|=|\s+-\s+|'s\s+|\s+is\s+)\s*(?P<v>\S.*)$", f.field)
rule("identity", rf"^I\s+am\s+(?:(?:Mr|Mrs|Ms|Mx|Dr|Prof)\.?\s+)?{NAME}\s*,\s*(?P<rest>.+)$", f.intro)
# -- identity ---------------------------------------------------------------------------
_NAMEV = r"(?P<v>(?-i:[A-Z\u00c0-\u024f][\w\u00c0-\u024f'.-]*)(?:\s+(?-i:[A-Z\u00c0-\u024f][\w\u00c0-\u024f'.-]*)){0,2})"
rule("identity", rf"^my\s+(?:full\s+|first\s+|real\s+|given\s+|legal\s+|actual\s+|birth\s+)?name(?:\s+is|'s)\s+(?:actually\s+)?{V}",
     r.name_of("name", "User's name is {}"))
rule("identity", rf"^(?:the\s+)?name(?:\s+is|'s)\s+{V}", r.name_of("name", "User's name is {}"))
rule("identity", r"^(?:you\s+can\s+|please\s+|just\s+|pls\s+|feel\s+free\s+to\s+)?call\s+me\s+(?P<v>(?!informally|formally|by\b).+)",
     r.name_of("preferred_name", "User likes to be called {}"))
rule("identity", rf"^(?:my\s+)?(?:friends|everyone|people|everybody|most\s+people|colleagues|family|mates|the\s+\w+|all\s+my\s+\w+)\s+(?:all\s+|usually\s+|just\s+)?calls?\s+me\s+{V}",
     r.name_of("preferred_name", "User likes to be called {}"))
rule("identity", rf"^I\s+{ADV}(?:go|am\s+going)\s+by\s+(?P<v>(?!(?:she|he|they|xe|ze)/).+)",
     r.name_of("preferred_name", "User goes by {}"))
rule("identity", rf"^my\s+nick\s*name\s+is\s+{V}", r.name_of("preferred_name", "User's nickname is {}"))
rule("identity", rf"^I\s+am\s+(?:called|named)\s+{V}", r.name_of("name", "User's name is {}"))
rule("identity", rf"^{_NAMEV}\s+(?:here|writing|speaking)(?:\s+again)?$", r.name_of("name", "User's name is {}"))
rule("identity", rf"^I\s+am\s+(?:Mr|Mrs|Ms|Mx|Dr|Prof)\.?\s+{NAME}", r.name_of("name", "User's name is {}"))
rule("identity", rf"^I\s+{ADV}(?:legally\s+)?changed\s+my\s+name\s+to\s+{V}", r.name_of("name", "User's name is {}"))
rule("identity", rf"^my\s+pronouns\s+are\s+{V}", r.simple("identity", "pronouns", single=True))
rule("identity", rf"^I\s+{ADV}(?:have\s+started\s+|started\s+|am\s+)?(?:use|using|go\s+by|going\s+by)\s+(?P<v>(?:she|he|they|xe|ze|it)/\w+(?:/\w+)?)",
     r.simple("identity", "pronouns", single=True))
rule("identity", r"^I\s+am\s+(?:now\s+|just\s+|only\s+)?(?P<v>\d{1,3})(?!\s*(?:weeks?|months?|days?|hours?|minutes?|%|kg|lbs?|cm|ft|mg|k\b|miles|km|percent|times|points))(?:\s*(?:years?|yrs?)(?:\s+old)?|\s*yo|\s*y/o)?(?:\s|$|,)", r.age)
rule("identity", r"^I\s+am\s+(?:a|an)\s+(?P<v>\d{1,3})[- ]?(?:year|yr)[- ]old\b", r.age)
rule("identity", rf"^I\s+{ADV}turned\s+(?P<v>\d{{1,3}})\b", r.age)
rule("identity", rf"^my\s+(?:birthday|bday|b-day)\s+(?:falls\s+on|is\s+on|lands\s+on)\s+{V}", r.simple("identity", "birthday", single=True))
rule("identity", r"^.*\bpronouns\b.*?(?P<v>\b(?:she|he|they|xe|ze|it)/\w+(?:/\w+)?)", r.simple("identity", "pronouns", single=True))
rule("identity", rf"^my\s+(?:birthday|bday|b-day)\s+is\s+(?:on\s+)?{V}", r.simple("identity", "birthday", single=True))
rule("identity", rf"^my\s+(?:birthday|bday|b-day)'s\s+(?:on\s+)?{V}", r.simple("identity", "birthday", single=True))
rule("identity", r"^I\s+was\s+born\s+(?:on|in)\s+(?P<v>(?:\d|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|the\s+\d).*)",
     r.simple("identity", "birthday", single=True))
rule("identity", rf"^I\s+was\s+born\s+(?:and\s+raised\s+)?in\s+{V}", r.simple("location", "birthplace", single=True))
# -- allergies, diet and health, before the generic "I'm a/an" -------------------------
_DEG = r"(?:(?:severely|very|highly|deathly|mildly|slightly|super|extremely|quite|a\s+bit|a\s+little|kind\s+of|really|so|both|all|also|seriously)\s+)*"
rule("allergies", rf"^(?:{BE}|my\s+\w+\s+and\s+I\s+are|we\s+are)\s+{ADV}{_DEG}(?:allergic|sensitive|hypersensitive)\s+(?:to|from|of|with)\s+{V}", r.simple("allergies", "allergy:{}"))
rule("allergies", rf"^my\s+(?:body|stomach|skin|gut|system)\s+(?:does\s+not|cannot|can\s+not|struggles\s+to|will\s+not)\s+(?:tolerate|handle|digest|process|agree\s+with)\s+{V}", r.simple("allergies", "allergy:{}"))
rule("allergies", rf"^{BE}\s+{ADV}{_DEG}(?P<v>[\w-]+[- ]intolerant)\b", r.simple("allergies", "allergy:{}"))
rule("allergies", rf"^{BE}\s+{ADV}{_DEG}intolerant\s+(?:to|of)\s+{V}", r.simple("allergies", "allergy:{}"))
rule("allergies", rf"^(?:{SUBJ}\s+{ADV}(?:have|got|have\s+got))\s+(?:a\s+|an\s+)?(?:severe\s+|mild\s+|bad\s+|serious\s+|slight\s+|life-threatening\s+|known\s+)?(?:allergy|allergies|intolerance|sensitivity|reaction)\s+to\s+{V}", r.simple("allergies", "allergy:{}"))
rule("allergies", rf"^(?:{SUBJ}\s+{ADV}(?:have|got|have\s+got))\s+(?:a\s+|an\s+)?(?:severe\s+|mild\s+|bad\s+|serious\s+|slight\s+|life-threatening\s+|known\s+)?(?P<v>[\w\s-]{{2,40}}?)\s+(?:allergy|allergies|intolerance|sensitivity)\b",
     r.simple("allergies", "allergy:{}"))
rule("allergies", r"^my\s+(?P<v>[\w\s-]{2,30}?)\s+(?:allergy|intolerance)\b", r.simple("allergies", "allergy:{}"))
rule("allergies", r"^(?P<v>[\w\s-]{2,30}?)\s+(?:allergy|allergies|intolerance|intolerant)\s+(?:here|is\s+there|is\s+still\s+there|still)\b", r.simple("allergies", "allergy:{}"))
rule("allergies", rf"^I\s+{ADV}(?:cannot|can\s+not)\s+(?:eat|have|digest|tolerate|handle|drink)\s+{V}", r.simple("allergies", "allergy:{}"))
rule("allergies", rf"^I\s+{ADV}(?:react(?:\s+(?:badly|poorly|strongly|really\s+badly))?|have\s+(?:a\s+)?(?:bad\s+)?reactions?|get\s+(?:hives|a\s+rash|rashes|sick|migraines?|headaches?))\s+(?:to|from|when\s+I\s+(?:eat|take|have))\s+{V}", r.simple("allergies", "allergy:{}"))
rule("allergies", r"^(?P<v>[\w\s-]{2,40}?)\s+(?:makes|make|gives|give)\s+(?:me|my\s+\w+)\s+(?:(?:a\s+)?(?:bad|terrible|awful|nasty|really\s+bad|horrible)\s+(?:rash|reaction|hives|headache|migraine)|break\s+out|itch|swell|tingle|burn|sick|ill|hives|a\s+rash|rashes|headaches?|migraines?|nauseous|bloated|itchy|sneeze|swell|puffy|cramps|stomach)", r.reacts)
rule("health", rf"^(?:my\s+)?(?:bloodwork|blood\s+work|blood\s+tests?|tests?|results|a\s+scan|scans|an?\s+mri|an?\s+x-ray|biopsy|screening)\b.{{0,40}}?\b(?:showed|shows|found|confirmed|revealed)\s+(?:that\s+)?I\s+(?:am|have)\s+{V}", r.simple("health", "health:{}"))
rule("health", r"^my\s+(?:doctor|gp|psychiatrist|specialist|physician)\s+(?:\w+\s+)?(?:switched|moved|changed|put)\s+me\s+(?:from\s+[\w-]+\s+)?(?:to|on|onto)\s+(?P<v>(?P<drug>[\w-]+).*)", r.medication)
rule("health", r"^(?:the|my)\s+(?:doctor|doc|gp|psychiatrist|specialist|physician|cardiologist|consultant|nurse)\s+(?:has|had|put|started|switched)\s+me\s+(?:on|onto)\s+(?P<v>.+)", r.simple("health", "health:medication:{}"))
rule("health", r"^(?:the\s+|my\s+)?(?:doctor|doc|gp|psychiatrist|specialist|physician|cardiologist|consultant)(?:\s+has|\s+is|'s)?\s+(?:also\s+)?(?:added|prescribed|started\s+me\s+on|put\s+me\s+on|given\s+me|gave\s+me|gives?\s+me)\s+(?P<v>.+)", r.simple("health", "health:medication:{}"))
rule("allergies", r"^(?P<v>[\w\s-]{2,40}?)\s+(?:does\s+not|doesn't|do\s+not|don't|never)\s+(?:agree|sit\s+well)\s+with\s+me", r.reacts)
rule("health", rf"^I\s+{ADV}(?:did|done|wrecked|banjaxed|knackered)\s+my\s+(?P<v>(?:acl|mcl|knee|back|ankle|hamstring|shoulder|wrist|hip|groin|calf|achilles|neck|elbow)\b.*)", r.simple("health", "health:{}"))
rule("health", rf"^I\s+{ADV}carry\s+(?:an?\s+)?(?P<v>(?:epipen|epi-pen|inhaler|insulin|glucose).*)", r.simple("health", "health:{}"))
_DIETV = rf"(?P<v>(?:{_DIET_WORDS})(?:\s+diet)?)"
rule("diet", rf"^(?:I\s+have\s+|we\s+have\s+|I\s+|we\s+)?{ADV}(?:switched|moved|gone|went|changed|converted|transitioned)\s+(?:over\s+)?to\s+(?:a\s+|an\s+|the\s+|being\s+)?{_DIETV}", r.simple("diet", "diet", single=True))
rule("diet", rf"^{BE}\s+{ADV}(?:a\s+|an\s+|(?:strictly|fully|mostly|100%|pretty\s+much)\s+)?(?P<v>{_DIET_WORDS})\b", r.im_a)
rule("diet", rf"^(?:(?:so|and|just)\s+)?(?:count|mark|put|treat)\s+me\s+(?:down\s+)?as\s+(?:a\s+|an\s+)?{_DIETV}", u.diet_is)
rule("diet", rf"^{BE}\s+{ADV}(?:on|following|doing|eating|going|trying)\s+(?:a\s+|an\s+|the\s+)?(?:strict\s+|mostly\s+)?{_DIETV}", r.simple("diet", "diet", single=True))
rule("diet", rf"^{BE}\s+{ADV}(?:on|following|doing)\s+(?:a|an|the)\s+{V}\s+diet\b", r.simple("diet", "diet", single=True))
rule("diet", rf"^{SUBJ}\s+{ADV}(?:try\s+to\s+|have\s+to\s+|need\s+to\s+|must\s+)?(?:follow|eat|keep|stick\s+to|do|cook)\s+(?:a\s+|an\s+)?(?:strict\s+|mostly\s+)?{_DIETV}", r.simple("diet", "diet", single=True))
rule("diet", rf"^{SUBJ}\s+{ADV}(?:eat|follow|am\s+on|do|keep\s+to|stick\s+to)\s+(?:a|an|the)\s+(?P<v>[\w-]+(?:\s+[\w-]+){{0,2}})\s+diet\b", r.simple("diet", "diet:{}"))
rule("diet", rf"^I\s+(?:have\s+)?{ADV}(?:quit|gave\s+up|given\s+up|stopped|cut\s+out|cut|do\s+not\s+(?:do|have|take))\s+(?P<v>caffeine|coffee|sugar|alcohol|booze|the\s+drink|the\s+booze|drink|crisps|takeaways|takeout|meat|dairy|gluten|red\s+meat|soda|fizzy\s+drinks|carbs|bread|junk\s+food|processed\s+food|fast\s+food|energy\s+drinks|chocolate|sweets|snacking)\b.*", r.simple("diet", "diet:avoid:{}"))
rule("diet", rf"^I\s+(?:only|strictly)\s+(?:eat|drink|buy|cook\s+with)\s+{V}", r.simple("diet", "diet:eats:{}"))
rule("diet", rf"^{SUBJ}\s+{ADV}keep\s+(?:a\s+)?(?P<v>kosher|halal|vegetarian|vegan|gluten-free|plant-based)\s+(?:kitchen|home|house|household)\b", r.simple("diet", "diet", single=True))
rule("diet", rf"^I\s+am\s+(?:not|no\s+longer)\s+(?:a\s+|an\s+)?(?P<v>{_DIET_WORDS})\b", r.simple("diet", "diet", single=True))
rule("diet", rf"^{SUBJ}\s+{ADV}(?:do\s+not|never|no\s+longer|stopped|quit|gave\s+up|cut\s+out|am\s+not|are\s+not)\s+(?:eat|eating|drink|drinking|touch|consume|having)\s+{V}", r.simple("diet", "diet:avoid:{}"))
rule("diet", rf"^I\s+(?:have\s+)?{ADV}(?:gave\s+up|given\s+up|quit|stopped|dropped|ditched|came\s+off|come\s+off)\s+(?:on\s+)?(?:being\s+)?(?:a\s+|an\s+|the\s+)?{_DIETV}", r.simple("diet", "diet", single=True))
rule("diet", rf"^I\s+am\s+(?:no\s+longer|not)\s+(?:on\s+|doing\s+)(?:a\s+|the\s+)?{_DIETV}", r.simple("diet", "diet", single=True))
rule("diet", r"^no\s+(?P<v>.+?)\s+for\s+me\b", r.simple("diet", "diet:avoid:{}"))
rule("diet", rf"^I\s+am\s+(?:trying\s+to\s+)?(?:cutting|cut)\s+(?:out|back\s+on|down\s+on)\s+{V}", r.simple("diet", "diet:cut:{}"))
rule("diet", rf"^I\s+{ADV}(?:eat|drink)\s+(?P<v>halal|kosher|organic|decaf.*|oat\s+milk.*|plant-based.*|eggs.*|fish.*|meat.*|dairy.*)", r.simple("diet", "diet:eats:{}"))
rule("health", r"^I\s+am\s+(?P<v>(?:\d+\s+(?:weeks?|months?)\s+)?pregnant\b.*)", r.simple("health", "health:pregnant", single=True))
rule("health", rf"^{BE}\s+{ADV}(?P<v>{_STATE_WORDS}|immunosuppressed|hypermobile|on\s+the\s+autism\s+spectrum|in\s+remission|post-op)\b", r.simple("health", "health:{}"))
rule("health", rf"^(?P<verb>I\s+{ADV}(?:have\s+been\s+diagnosed\s+(?:with|as)|have\s+been\s+living\s+with|have\s+been\s+dealing\s+with|have\s+got|have\s+had|am\s+having|have|got|had|live\s+with|suffer\s+from|struggle\s+with|was\s+(?:\w+\s+)?diagnosed\s+(?:with|as)|got\s+diagnosed\s+(?:with|as)|deal\s+with|am\s+dealing\s+with|am\s+recovering\s+from|am\s+being\s+treated\s+for|am\s+living\s+with|underwent|went\s+through))\s+{V}", r.condition)
rule("health", rf"^I\s+{ADV}(?:take|am\s+on|am\s+taking)\s+(?P<v>\d+\s*(?:mg|mcg|g|ml|units?))\s+(?:of\s+)?(?P<drug>[\w-]+)", r.medication)
rule("health", rf"^I\s+{ADV}(?:take|am\s+on|am\s+taking)\s+(?P<v>(?P<drug>[\w-]+)(?:\s+[\w-]+){{0,2}}?\s+(?:for|daily|every\s+(?:day|morning|night|evening)|twice|once|three\s+times|\d+\s+times|at\s+night|in\s+the\s+morning|to\s+(?:manage|control|treat))\b.*)", r.medication)
rule("health", r"^my\s+(?:doctor|gp|psychiatrist|specialist|endocrinologist|cardiologist|neurologist|physician|dr\s+\w+)\s+(?:\w+\s+)?(?:raised|increased|lowered|reduced|changed|upped|bumped|doubled|halved|cut|adjusted)\s+my\s+(?P<drug>[\w-]+)\s+(?:dose|dosage|prescription)?\s*(?:up\s+|down\s+)?to\s+(?P<v>\d+\s*(?:mg|mcg|g|ml|units?))", r.medication)
rule("health", r"^I\s+(?:take|am\s+on)\s+(?P<v>(?:metformin|insulin|levothyroxine|lithium|antidepressants|ssris?|blood\s+thinners|warfarin|adderall|ritalin|vyvanse|birth\s+control|the\s+pill|statins|beta\s+blockers|prednisone|inhalers?|an\s+inhaler|medication|meds|sertraline|zoloft|prozac|fluoxetine|lexapro|escitalopram|wellbutrin|bupropion|ozempic|semaglutide|mounjaro|\w+\s+medication|\w+\s+meds).*)", r.simple("health", "health:medication:{}"))
rule("health", rf"^I\s+{ADV}(?:broke|sprained|tore|injured|hurt|dislocated|fractured|pulled|herniated|had\s+surgery\s+on)\s+my\s+{V}", r.simple("health", "health:{}"))
rule("health", rf"^I\s+{ADV}(?:see|visit)\s+(?:a|my)\s+(?P<v>(?:therapist|psychiatrist|counsellor|counselor|psychologist|physio|physiotherapist|chiropractor|dietitian|nutritionist).*)", r.simple("health", "health:{}"))
rule("health", rf"^I\s+{ADV}(?P<what>smoke|vape|drink)\b(?!\s+(?:water|tea|coffee|milk|juice))", r.habit)
rule("health", rf"^I\s+{ADV}(?:quit|stopped|gave\s+up|have\s+quit|have\s+stopped|have\s+given\s+up)\s+(?P<what>smoking|vaping|drinking|alcohol)\b", r.habit)
# -- stack switches come before "moved to" (a place) -----------------------------------
_SWITCH = (
    r"(?:switched|moved|migrated|changed|converted|went\s+over|jumped\s+ship|ported|"
    r"transitioned|upgraded|finished\s+migrating|finished\s+moving|are\s+migrating|"
    r"are\s+moving|am\s+migrating|am\s+switching|are\s+switching)"
)
rule("stack", rf"^(?:{SUBJ}\s+(?:have\s+|had\s+)?)?{ADV}{_SWITCH}\s+(?:over\s+)?(?:(?:our|my|the|everything|it\s+all|all|it|them|stuff)(?:\s+[\w.-]+){{0,2}}\s+)?(?:over\s+)?(?:from\s+\S+(?:\s+\S+)?\s+)?to\s+(?:a\s+|an\s+|the\s+)?{V}", st.tech("switch"))
rule("stack", rf"^(?:everything|it\s+all|all\s+of\s+it|our\s+stuff|the\s+app|our\s+app|the\s+site|prod|production)\s+(?:now\s+)?(?:lives|runs|is\s+hosted|sits|is)\s+(?:on|in)\s+{V}", st.tech("switch"))
rule("stack", rf"^{SUBJ}\s+(?:have\s+)?{ADV}(?:brought\s+in|added|adopted|introduced|rolled\s+out|started\s+using|moved\s+some\s+\w+\s+to)\s+{V}", st.tech("use"))
rule("stack", rf"^{SUBJ}\s+{ADV}(?:wiped\s+\w+\s+\w+\s+and\s+)?(?:installed|reinstalled|set\s+up|put)\s+(?:a\s+|an\s+)?{V}", st.tech("switch"))
rule("possessions", rf"^(?:I|we)\s+{ADV}(?:traded|swapped|part-exchanged|exchanged)\s+(?:it|her|him|that|the\s+\w+|my\s+(?:old\s+)?\w+(?:\s+\w+)?|our\s+(?:old\s+)?\w+)\s+in\s+for\s+(?:a\s+|an\s+|the\s+)?{V}", r.possession)
rule("possessions", rf"^(?:I|we)\s+{ADV}(?:took|got|bought|picked\s+up|buy|purchased)\s+(?:now\s+)?(?:a\s+|an\s+|the\s+|our\s+|my\s+)?(?:new\s+)?(?P<v>(?:[\w-]+\s+)?(?-i:[A-Z][\w-]*)(?:\s+[\w-]+){{0,3}})", r.possession)
rule("possessions", rf"^(?:I|we)\s+(?:have\s+)?{ADV}(?:upgraded|switched|changed|downsized)\s+to\s+(?:a\s+|an\s+|the\s+|my\s+)?(?P<v>(?:[\w-]+\s+){{0,2}}(?-i:[A-Z0-9])[\w-]*(?:\s+[\w-]+){{0,2}})", u.known_possession)
rule("possessions", rf"^I\s+{ADV}(?:replaced|swapped|traded\s+in|upgraded)\s+my\s+(?:old\s+)?(?P<what>\w+)\s+(?:with|for|to)\s+(?:a\s+|an\s+|the\s+)?{V}", r.possession)
# -- location -----------------------------------------------------------------------
_LIVE = r"(?:live|reside|am\s+residing|are\s+residing|stay|am\s+living|are\s+living|am\s+staying|have\s+been\s+living|have\s+lived|lived|have\s+been|am\s+settled|are\s+settled)"
rule("location", rf"^{SUBJ}\s+{ADV}(?:no\s+longer|don't|do\s+not|dont)\s+(?:live|reside)\s+in\s+{V}", places.left_home)
rule("location", rf"^{SUBJ}\s+{ADV}(?:have\s+)?(?:moved|relocated)\s+(?:out\s+of|away\s+from)\s+{V}", places.left_home)
rule("location", rf"^{SUBJ}\s+{ADV}{_LIVE}\s+(?:in|at|on)\s+{V}", places.lives)
rule("location", rf"^{SUBJ}\s+{ADV}(?:live|are\s+living|am\s+living)\s+(?P<v>(?:with|alone|by\s+myself|on\s+my\s+own|near|outside|close\s+to|just\s+outside|next\s+to|right\s+outside).*)", places.lives)
rule("location", rf"^{BE}\s+{ADV}(?:based|located|settled|stationed|living|staying)\s+(?:in|out\s+of|near|outside)\s+{V}", places.lives)
rule("location", rf"^{BE}\s+(?:currently\s+|now\s+)?in\s+(?P<v>(?-i:[A-Z]).+)", places.lives)
rule("location", rf"^{BE}\s+(?:now\s+)?in\s+(?P<v>(?!(?:a|an|the|my|our|bed|love|trouble|pain|class|school|work|town|hospital|hospitals|charge|touch|debt|shock|tears|luck|time|line|place|public|private|person|need|favour|favor|favor|doubt|danger|hiding|denial|recovery|remission|therapy|rehab|labour|labor|treatment|between|front|back|middle|shape|form|bits|pieces)\b)[a-z][a-z-]+(?:\s+[a-z][a-z-]+){{0,2}})\s+now\b", places.lives)
rule("location", rf"^(?:my|our)\s+(?:apartment|flat|house|home|place|condo)\s+is\s+(?:in|on|near|just\s+outside|outside)\s+{V}", places.lives)
rule("location", rf"^(?:my\s+)?home\s+(?:for\s+me\s+)?(?:is|base\s+is)\s+(?:in\s+)?{V}", places.lives)
rule("location", r"^I\s+call\s+(?P<v>.+?)\s+home\b", places.lives)
rule("location", r"^(?P<v>(?-i:[A-Z]).{1,50}?)\s+(?:has\s+been|is|became)\s+(?:my\s+)?home\b", places.lives)
rule("location", rf"^(?:my|our)\s+(?:apartment|flat|house|home|place|condo|studio)(?:'s|\s+is)\s+(?:in|on|near|just\s+outside|outside)\s+{V}", places.lives)
rule("location", r"^(?:I\s+am|we\s+are)\b.{0,60}?\bliving\s+in\s+(?P<v>(?-i:[A-Z]).+)", places.lives)
rule("location", rf"^{SUBJ}\s+{ADV}(?:rent|am\s+renting|are\s+renting|share|am\s+sharing|are\s+sharing|have\s+found)\s+(?:a|an|the)\s+(?:\w+\s+)?(?:room|flat|apartment|place|house|studio|unit|bedsit)\s+(?:in|at|near)\s+(?P<v>(?-i:[A-Z]).+)", places.lives)
rule("location", rf"^{SUBJ}\s+(?:have\s+)?{ADV}(?:packed\s+up\s+and\s+|upped\s+sticks\s+and\s+|finally\s+)?(?:moved|relocated|moved\s+back|moved\s+over|moved\s+out|moved\s+up|moved\s+down|emigrated|immigrated|shifted|settled)\s+(?:back\s+)?(?:from\s+.+?\s+)?(?:to|in)\s+{V}", places.lives)
rule("location", rf"^{SUBJ}\s+(?:have\s+)?{ADV}(?:moved|relocated)\s+into\s+(?:a|our|my|the)\s+(?:new\s+)?(?:place|flat|house|home|apartment|unit|condo)\s+(?:in|at|on)\s+(?P<v>(?-i:[A-Z]).+)", places.lives)
rule("location", rf"^{BE}\s+{ADV}(?:originally\s+)?from\s+{V}", r.simple("location", "hometown", single=True))
rule("location", rf"^my\s+(?:native\s+(?:place|town|village|city|state)|home\s+village|ancestral\s+(?:home|village))\s+is\s+{V}", r.simple("location", "hometown", single=True))
rule("location", rf"^I\s+{ADV}(?:come|hail)\s+from\s+{V}", r.simple("location", "hometown", single=True))
rule("location", rf"^I\s+(?:grew\s+up|was\s+raised|was\s+brought\s+up)\s+(?:in|on|near)\s+{V}", r.simple("location", "hometown", single=True))
rule("location", rf"^my\s+(?:home\s*town|home\s+city|home\s+country)\s+is\s+{V}", r.simple("location", "hometown", single=True))
rule("location", rf"^{SUBJ}\s+(?:have\s+)?{ADV}made\s+the\s+(?:big\s+)?move\s+(?:up\s+|down\s+|over\s+|back\s+|out\s+)?(?:to|into)\s+{V}", places.lives)
rule("location", rf"^{BE}\s+{ADV}(?:now\s+)?(?:renting|living|staying|based)\s+(?:in|at)\s+(?P<v>(?-i:[A-Z]).+)", places.lives)
# -- work -------------------------------------------------------------------------
_JOB = r"(?:got\s+(?:a\s+)?(?:new\s+)?job|landed\s+(?:a\s+)?(?:new\s+)?job|accepted\s+(?:an\s+)?offer|started\s+(?:a\s+)?(?:new\s+)?(?:job|position|role)|started\s+working|began\s+working|joined|started(?=\s+(?:at|with)\b))"
rule("work", rf"^I\s+(?:have\s+)?{ADV}{_JOB}\s+(?:at|with|for|from)?\s*{V}", r.works)
rule("work", rf"^I\s+{ADV}(?:work|am\s+working|have\s+been\s+working|have\s+worked)\s+(?:at|for|with)\s+{V}", r.works)
rule("work", rf"^(?:my\s+|the\s+)?new\s+(?:job|role|position|gig|contract)\s+(?:starts|begins|started|is)\s+(?:\w+\s+){{0,3}}?(?:at|with)\s+{V}", r.works)
# non-native "working in Wipro", "finished my first week at Auto Trader", "landed a gig at"
rule("work", rf"^I\s+{ADV}(?:work|am\s+working|have\s+been\s+working|was\s+working)\s+in\s+(?P<v>(?-i:[A-Z])[\w&.'-]{{2,}}(?:\s+(?-i:[A-Z])[\w&.'-]*)*\b.*)", r.works)
rule("work", rf"^I\s+{ADV}(?:finished|completed|started|had|survived|did)\s+my\s+(?:first|second|third|1st|2nd)\s+(?:day|week|month|shift)\s+(?:at|with|in)\s+{V}", r.works)
rule("work", rf"^I\s+{ADV}(?:landed|got|scored|bagged|secured|accepted)\s+(?:a\s+|an\s+|the\s+)?(?:new\s+|full[- ]time\s+|part[- ]time\s+|permanent\s+|grad\s+|graduate\s+)*(?:job|gig|role|position|offer|contract|placement)\s+(?:at|with|in)\s+{V}", r.works)
rule("work", rf"^(?:my|our)\s+(?:team|department|group|squad)\s+(?:at|in)\s+{V}", r.works)
rule("work", rf"^I\s+{ADV}(?:work|am\s+working|have\s+been\s+working|freelance|consult|contract|temp|am\s+freelancing|have\s+been\s+freelancing|have\s+been\s+contracting)\s+(?:as|like)\s+(?:an?\s+|the\s+)?{V}", r.simple("work", "occupation", single=True))
rule("work", rf"^I\s+{ADV}work\s+(?:in|in\s+the)\s+{V}", r.simple("work", "industry", single=True))
rule("work", rf"^I\s+{ADV}(?:work|am\s+working)\s+(?P<v>(?:from\s+home|remotely|remote|night\s+shifts?|nights|part[- ]time|full[- ]time|freelance|shifts|weekends|in\s+shifts|hybrid|on\s+call).*)", r.simple("work", "work_pattern", single=True))
rule("work", rf"^I\s+(?:am|work)\s+{ADV}(?:on\s+)?(?:an?\s+)?(?P<v>(?:zero[- ]hours?|fixed[- ]term|casual|temporary|temp|rolling)\s+contract\b.*|(?:fifo|fly[- ]in[- ]fly[- ]out)\b.*)", r.simple("work", "work_pattern", single=True))
rule("work", rf"^I\s+am\s+{ADV}(?:employed|working)\s+(?:at|by|for)\s+{V}", r.works)
rule("work", rf"^I\s+(?:used\s+to\s+work|previously\s+worked|worked|once\s+worked)\s+(?:at|for)\s+{V}", r.simple("work", "past_employer:{}"))
rule("work", rf"^I\s+{ADV}(?:got|was|have\s+been|am|been)\s+{ADV}(?:promoted|made)\s+(?:to\s+)?(?:an?\s+|the\s+)?{V}", r.simple("work", "occupation", single=True))
rule("work", rf"^my\s+(?:job|role|position|title|job\s+title|occupation|profession|day\s+job)\s+is\s+(?:an?\s+)?{V}", r.simple("work", "occupation", single=True))
rule("work", rf"^my\s+(?:employer|company|workplace)\s+is\s+{V}", r.simple("work", "employer", single=True))
rule("work", r"^I\s+am\s+(?:on|part\s+of|in)\s+the\s+(?P<v>.+?\s+team)\b", r.simple("work", "team", single=True))
rule("work", r"^I\s+(?:lead|manage|run|head)\s+(?:the|a|our)\s+(?P<v>.+?\s+(?:team|department|group|squad|division))\b", r.simple("work", "team", single=True))
rule("work", rf"^I\s+am\s+{ADV}(?P<v>retired|self-employed|unemployed|freelancing|between\s+jobs|job\s+hunting|on\s+(?:parental|maternity|paternity|medical|sick)\s+leave|a\s+stay-at-home\s+\w+|a\s+full-time\s+student|on\s+a\s+career\s+break)\b.*", r.status)
rule("work", rf"^I\s+{ADV}(?:run|own|founded|co-founded|started|manage)\s+(?:a|an|my\s+own|our|the)\s+(?P<v>.*\b(?:business|company|shop|store|bakery|restaurant|cafe|café|startup|agency|studio|firm|practice|clinic|salon|bar|farm|consultancy|brewery|nonprofit|non-profit|charity|school|gym|boutique|b&b|hotel|coffee\s+shop|food\s+truck|etsy\s+shop|newsletter|podcast|channel|blog)\b.*)", r.simple("work", "business:{}"))
rule("work", r"^I\s+am\s+(?:the\s+|a\s+|an\s+)?(?P<v>(?:ceo|cto|cfo|coo|founder|co-founder|cofounder|head|director|vp|owner|manager|lead|president|chair)\s+(?:of|at)\s+.+)", r.simple("work", "occupation", single=True))
rule("work", rf"^I\s+{ADV}(?:drive|deliver|ride|write|design|code|consult|freelance|tutor|cook|clean|model|translate|edit|illustrate|photograph|dance|play|volunteer)\s+(?:\w+\s+)?for\s+(?P<v>(?-i:[A-Z]).+)", r.works)
rule("work", rf"^I\s+{ADV}(?:manage|lead|run|head)\s+(?:a|the|our)\s+(?:\w+\s+)?team\b.*?\bat\s+(?P<v>(?-i:[A-Z]).+)", r.works)
rule("work", rf"^I\s+am\s+(?:employed|working|hired)\s+as\s+(?:an?\s+|the\s+)?{V}", r.simple("work", "occupation", single=True))
rule("work", rf"^I\s+(?:have\s+)?{ADV}(?:trained|qualified|retrained|certified)\s+as\s+(?:an?\s+)?{V}", r.simple("work", "occupation", single=True))
rule("work", rf"^I\s+{ADV}(?:left|quit|lost|resigned\s+from)\s+(?P<v>my\s+(?:job|position|role)\b.*)", r.status)
rule("work", rf"^I\s+{ADV}teach\s+{V}", r.simple("work", "occupation", single=True))
rule("work", rf"^I\s+{ADV}do\s+(?P<v>.+?\s+(?:for|at)\s+(?-i:[A-Z]).*)", r.simple("work", "occupation", single=True))
# -- education ----------------------------------------------------------------------
rule("education", rf"^I\s+am\s+{ADV}(?:doing|finishing|starting|in)\s+(?:my\s+|the\s+)?(?:[\w-]+\s+){{0,2}}?(?:undergrad|degree|masters?|master's|phd|bachelor's|bachelors|mba|diploma|course|studies|first\s+year|second\s+year|third\s+year|final\s+year|\w+\s+year)\b.*?\b(?:at|in)\s+(?P<v>(?-i:[A-Z])[\w&.'-]*(?:\s+(?-i:[A-Z])[\w&.'-]*)*)", r.simple("education", "school", single=True))
rule("education", rf"^I\s+{ADV}(?:study|am\s+studying|have\s+been\s+studying|am\s+majoring\s+in|major\s+in)\s+{V}", r.simple("education", "education:current", single=True))
rule("education", rf"^I\s+{ADV}(?:studied|majored\s+in|minored\s+in|did\s+my\s+\w+(?:'s)?\s+(?:degree\s+)?in|read)\s+{V}", r.simple("education", "education:{}"))
rule("education", r"^I\s+(?:have|have\s+got|hold|got|earned|completed|finished|am\s+doing|am\s+finishing|am\s+working\s+on|am\s+writing|am\s+pursuing|am\s+taking)\s+(?:a|an|my)\s+(?P<v>(?:[\w'-]+\s+){0,2}(?:degree|phd|ph\.d\.|doctorate|masters?|master's|bachelor's|bachelors|mba|bsc|msc|ba|ma|diploma|certificate|certification|thesis|dissertation|capstone|course|bootcamp|a-levels?|gcses?|abitur|baccalaureate|bac|matric|leaving\s+cert|ib|high\s+school|undergrad|apprenticeship|residency|fellowship)\b.*)", r.simple("education", "education:{}"))
rule("education", rf"^I\s+{ADV}(?:did|finished|completed|got|passed)\s+my\s+(?P<v>(?:undergrad|degree|masters?|master's|phd|bachelor's|bachelors|mba|training|residency|a-levels|studies|pgce|btec|hnd|diploma|apprenticeship|certificate|leaving\s+cert|finals|bar\s+exam|boards)\s+(?:at|in|from)\s+.+)", r.simple("education", "education:{}"))
rule("education", rf"^I\s+{ADV}(?:changed|switched)\s+(?:my\s+)?(?:major|course|degree|programme|program|studies)\s+to\s+{V}", r.simple("education", "education:current", single=True))
rule("education", rf"^I\s+{ADV}(?:graduated|graduate|dropped\s+out)\s+(?:from\s+|of\s+)?{V}", r.simple("education", "education:{}"))
rule("education", rf"^I\s+{ADV}(?:go\s+to|attend|attended|went\s+to|am\s+at|am\s+enrolled\s+at|am\s+enrolled\s+in|study\s+at)\s+(?P<v>(?:the\s+)?(?-i:[A-Z]).*)", r.simple("education", "school", single=True))
rule("education", r"^I\s+am\s+(?:a|an)\s+(?P<v>(?:[\w-]+\s+){0,2}(?:student|freshman|sophomore|junior|senior|undergrad|undergraduate|postgrad|grad\s+student|phd\s+candidate|doctoral\s+candidate|postdoc)(?=\s+(?:at|in|of|year|student|now)\b|\s*$|\s*,).*)", r.simple("education", "student", single=True))
rule("education", r"^I\s+am\s+(?:doing|taking|enrolled\s+in|in)\s+(?:a|an|my)\s+(?P<v>.*?(?:course|class|bootcamp|degree|program|programme|masters?|phd|mba|certification|apprenticeship)\b.*)", r.simple("education", "education:{}"))
rule("education", r"^I\s+am\s+in\s+(?P<v>(?:\d+(?:st|nd|rd|th)\s+grade|grade\s+\d+|year\s+\d+|my\s+(?:first|second|third|fourth|final|last|junior|senior)\s+year|(?:high\s+school|college|uni|university|grad\s+school|med\s+school|law\s+school|nursing\s+school)).*)", r.simple("education", "student", single=True))
rule("education", rf"^my\s+(?:degree|major|minor|phd|masters?|thesis|dissertation|research|field|background)\s+is\s+(?:in\s+|on\s+)?{V}", r.simple("education", "education:{}"))
rule("education", r"^I\s+am\s+(?P<v>homeschooled|home-schooled|self-taught|a\s+college\s+dropout|a\s+high\s+school\s+dropout|a\s+graduate\s+of\s+.+)\b", r.simple("education", "education:{}"))
rule("education", rf"^I\s+{ADV}(?:taught\s+myself|learned)\s+(?P<v>.+)", r.simple("education", "education:{}"))
# -- pets ---------------------------------------------------------------------------
_NAMESEP = (
    r"(?:\s*[,\u2014\u2013-]+\s*(?:an?\s+[\w-]+(?:\s+[\w-]+)?\s+)?)?\s*(?:[,\u2014\u2013]\s*(?:(?:his|her|its|their)\s+name\s+is\s+)?|"
    r"\s+(?:named|called|who\s+is\s+called|by\s+the\s+name\s+of|whose\s+name\s+is)\s+)"
)
rule("pets", rf"^{NAME}\s+is\s+(?:my|our)\s+(?:family\s+)?{_ADJ}(?P<kind>{_PET_WORDS})\b", r.pet)
rule("pets", rf"^{NAME},\s+(?:my|our)\s+(?:family\s+)?{_ADJ}(?P<kind>{_PET_WORDS})\b", r.pet)
rule("pets", rf"^(?:my|our|the)\s+(?:family\s+)?{_ADJ}(?P<kind>{_PET_WORDS})(?P<tail>'s\s+name\s+is|\s+is\s+(?:called|named)|\s+name\s+is|\s+goes\s+by|,)\s+{NAME}", r.pet)
rule("pets", rf"^(?:my|our)\s+(?:family\s+)?(?:\w+\s+)?(?:dog|cat|pet)\s+is\s+(?:a|an)\s+{_ADJ}(?P<kind>{_PET_WORDS})(?:\s+(?-i:[A-Z]\w+))?{_NAMESEP}{NAME}", r.pet)
rule("pets", rf"^{_HAVE_VERB}\s+{_NUM}\s+{_ADJ}(?:(?-i:[A-Z]\w+)\s+)?(?P<kind>{_PET_WORDS})(?:\s+\w+)?{_NAMESEP}{NAME}", r.pet)
rule("pets", rf"^(?:my|our)\s+(?:family\s+)?{_ADJ}(?P<kind>{_PET_WORDS})\s+{NAME}(?=\s|,|$)", r.pet)
rule("pets", rf"^(?:my|our)\s+(?:\w+\s+)?(?P<kind>{_PET_WORDS})\s+(?P<v>[a-z][a-z'-]{{1,15}})\s+(?=(?:keeps|is|has|loves|hates|likes|was|just|always|never|gets|got|knocked|ate|eats|sleeps|sits|will|does|did|cannot|won't|keep)\b)", r.pet)
rule("pets", rf"^(?:I|we)\s+{ADV}renamed\s+(?:my|our|the)\s+(?P<kind>{_PET_WORDS})(?:\s+to\s+{NAME})?", r.pet)
rule("pets", rf"^{_HAVE_VERB}\s+{_NUM}\s+{_ADJ}(?:(?-i:[A-Z]\w+)\s+)?(?P<kind>{_PET_WORDS})(?P<v>)\b", r.pet)
rule("pets", r"^I\s+am\s+(?:a\s+)?(?P<kind>dog|cat)\s+(?:owner|mom|dad|parent|person)(?P<v>)\b", r.pet)
# -- family ---------------------------------------------------------------------------
_RELMOD = r"(?:(?:new|current|ex-?|late|former|old|future|soon-to-be|little|big|older|younger|baby|eldest|oldest|youngest|twin|two|three|teenage|adult|step-?|grown-up|\d+-year-old)\s+)*"
rule("family", rf"^(?:my|our)\s+(?P<rel>{_RELMOD}(?:{_REL_WORDS}|family))(?P<tail>'s\s+name\s+is|\s+is\s+(?:called|named)|\s+name\s+is|,)?\s+{V}", r.relation)
rule("family", r"^(?:my\s+\w+\s+and\s+I|we)\s+(?:have|are\s+raising|are\s+expecting)\s+(?P<v>(?!(?:also|just|already|recently|finally|never|been|got|gotten|brought|had|done|made|moved|started|switched|decided|added|bought|sold|taken|seen|booked|found|left|put|set)\b)(?![a-z]+ed\b).+)", r.simple("family", "family:{}"))
rule("family", r"^(?:I|we)\s+(?:am|are|were|was|have\s+been|got)\s+(?:\w+\s+)?blessed\s+with\s+(?P<v>(?:a\s+|our\s+|a\s+baby\s+|baby\s+)?(?:baby|boy|girl|son|daughter|twins|child|grandson|granddaughter)\b.*)", r.simple("family", "family:{}"))
rule("family", rf"^{_HAVE_VERB}\s+(?P<v>(?:a|an)\s+\d{{1,2}}[- ](?:year|yr|month)[- ]old\b(?!\s+(?:{_PET_WORDS})).*)", r.simple("family", "family:{}"))
rule("family", rf"^{_HAVE_VERB}\s+(?P<v>{_NUM}\s+(?:\w+\s+)?(?:kids?|children|child|sons?|daughters?|brothers?|sisters?|siblings?|grandkids|grandchildren|twins|stepkids|stepsons?|stepdaughters?|boys|girls|baby|toddler|teenagers?|teens|grandsons?|granddaughters?|nieces?|nephews?)\b.*)", r.simple("family", "family:{}"))
rule("family", rf"^I\s+(?:am|have\s+been)\s+{ADV}(?:seeing|dating|going\s+out\s+with|with|together\s+with)\s+(?:(?:someone|somebody)(?:\s+new)?(?:\s+now)?\s*,?\s*(?:called\s+|named\s+)?|a\s+(?:lad|guy|girl|woman|man|fella|bloke|lass)\s+(?:called|named)\s+)?(?P<v>(?-i:[A-Z][\w'-]+))(?:\s+now|\s+these\s+days|\s*,|\s*$)", r.simple("family", "family:partner", single=True))
rule("family", r"^(?:I\s+am|we\s+are|I\s+have\s+been|we\s+have\s+been)\s+(?P<v>(?:happily\s+|newly\s+|recently\s+|just\s+)?(?:married|engaged|single|divorced|widowed|separated|in\s+a\s+relationship|dating\s+someone|in\s+a\s+long-distance\s+relationship|in\s+a\s+(?:civil|domestic)\s+partnership|partnered|seeing\s+someone)\b.*)", r.simple("family", "relationship_status", single=True))
rule("family", rf"^(?:I|we)\s+{ADV}(?P<v>got\s+(?:married|engaged|divorced)\b.*)", r.simple("family", "relationship_status", single=True))
rule("family", r"^I\s+(?:am\s+)?(?P<v>(?:a|an)\s+(?:\w+\s+)?(?:mom|mum|mother|dad|father|parent|grandma|grandmother|grandpa|grandfather|stepmom|stepdad|single\s+mom|single\s+dad|single\s+parent|foster\s+parent|caregiver\s+for|carer\s+for)\b.*)", r.simple("family", "family:parent", single=True))
rule("family", r"^(?:we\s+are|I\s+am)\s+(?P<v>expecting\b.*)", r.simple("family", "family:expecting", single=True))
rule("family", rf"^I\s+{ADV}(?:co-parent|look\s+after|take\s+care\s+of|care\s+for|raise|am\s+raising)\s+(?P<v>my\s+.+)", r.simple("family", "family:{}"))
rule("family", rf"^(?:I|we)\s+{ADV}(?:have\s+)?(?P<v>(?:divorced|separated|split\s+up|broke\s+up)\b.*)", u.status_of_relationship)
# -- languages ----------------------------------------------------------------------
rule("languages", r"^as\s+a\s+(?:native|fluent|heritage)\s+(?P<v>[\w-]+(?:\s+[\w-]+)?)\s+speaker\b", r.language)
rule("languages", r"^(?P<v>[\w-]+)(?:'s|\s+is)\s+my\s+(?:native|first|mother|home|second|third)\s+(?:language|tongue)\b", r.language)
rule("languages", rf"^{SUBJ}\s+{ADV}(?:can\s+)?(?:get\s+by|manage|cope|survive)\s+in\s+{V}", r.language)
rule("languages", rf"^{SUBJ}\s+{ADV}(?:have|have\s+got|got)\s+(?:fluent|good|decent|basic|conversational|native|some|a\s+bit\s+of|a\s+little|a\s+good\s+bit\s+of|a\s+few\s+words\s+of|schoolboy|schoolgirl|rusty|broken)\s+{V}", r.language)
rule("languages", rf"^{SUBJ}\s+{ADV}(?:speak|can\s+speak|also\s+speak|know|am\s+knowing|can\s+read|can\s+understand|can\s+write|understand|read|write|grew\s+up\s+(?:speaking|bilingual\s+in|trilingual\s+in|with))\s+(?:some\s+|a\s+(?:bit|little)\s+(?:of\s+)?|basic\s+|fluent\s+|conversational\s+|decent\s+|good\s+|broken\s+|native\s+|passable\s+)?{V}", r.language)
rule("languages", rf"^I\s+am\s+{ADV}(?:fluent|conversational|proficient|bilingual|trilingual|native|semi-fluent|nearly\s+fluent|almost\s+fluent|decent|okay|ok|good|rusty|intermediate|advanced|a\s+beginner)\s+(?:in|with|at)\s+{V}", r.language)
rule("languages", r"^I\s+am\s+(?:a\s+)?(?:native|fluent|heritage)\s+(?P<v>\w+(?:\s+\w+)?)\s+speaker\b", r.language)
rule("languages", rf"^I\s+(?:am|have\s+been)\s+{ADV}(?:learning|studying|teaching\s+myself|taking\s+(?:\w+\s+)?(?:classes|lessons|courses?)\s+in|practicing|practising|brushing\s+up\s+on|picking\s+up|trying\s+to\s+(?:learn|pick\s+up|improve)|doing\s+duolingo\s+(?:for|in))\s+{V}", r.language)
rule("languages", rf"^I\s+{ADV}(?:learn|study|started\s+learning|began\s+learning|take\s+(?:\w+\s+)?(?:classes|lessons)\s+in)\s+{V}", r.language)
rule("languages", r"^(?P<v>[\w-]+)\s+is\s+what\s+(?:we|I)\s+speak\b", r.language)
rule("languages", rf"^my\s+(?:native|first|mother|home)\s+(?:language|tongue)\s+is\s+{V}", r.simple("languages", "native_language", single=True))
rule("languages", r"^(?P<v>\w+)\s+is\s+my\s+(?:native|first|mother|home)\s+(?:language|tongue)\b", r.simple("languages", "native_language", single=True))
rule("languages", r"^my\s+(?P<v>\w+)\s+is\s+(?:\w+\s+)?(?:conversational|native|fluent|basic|rusty|decent|good|ok|okay|intermediate|beginner|advanced|[abc][12]|pretty\s+good|not\s+bad|solid|limited|passable|weak|strong)\b", r.language)
# -- stack ------------------------------------------------------------------------
_USE = (
    r"(?:use|run|code\s+in|program\s+in|write|develop\s+(?:in|with|on)|build\s+(?:with|in|on)|"
    r"work\s+(?:with|in)|deploy(?:\s+\w+)?\s+(?:to|on)|host(?:\s+\w+)?\s+(?:on|with)|daily[- ]drive|main|"
    r"rely\s+on|ship\s+with|standardi[sz]ed\s+on|are\s+on|am\s+on|are\s+using|am\s+using|"
    r"are\s+running|am\s+running|am\s+coding\s+in|am\s+writing|are\s+built\s+on|"
    r"do\s+(?:all\s+)?(?:my|our|most\s+of\s+(?:my|our))\s+(?:\w+\s+)?(?:work|coding|development|analysis)\s+in|"
    r"have\s+been\s+using|live\s+in|swear\s+by|stick\s+with|stick\s+to)"
)
rule("stack", rf"^(?:most|all|much|half)\s+of\s+(?:my|our)\s+(?:code|work|coding|projects?|development|day)\s+(?:is|are)\s+(?:in\s+|spent\s+in\s+)?{V}", st.tech("use"))
rule("stack", rf"^{SUBJ}\s+{ADV}(?:do|am\s+doing)\s+(?:mostly\s+|mainly\s+)?(?P<v>(?:[\w+#.-]+\s+){{0,2}}(?:development|dev|programming|coding|work|stuff|scripting)\b.*|embedded\s+.+)", st.tech("use"))
rule("stack", rf"^{SUBJ}\s+{ADV}(?:build|make|write|develop|ship|create)\s+(?:\w+\s+){{0,2}}(?:in|with|on|using)\s+{V}", st.tech("use"))
rule("stack", rf"^{SUBJ}\s+{ADV}{_USE}\s+(?:everything\s+|it\s+all\s+|all\s+|our\s+\w+\s+|my\s+\w+\s+)?(?:on\s+|to\s+)?{V}", st.tech("use"))
rule("stack", rf"^(?:my|our)\s+(?:team's\s+|company's\s+|whole\s+)?(?:\w+\s+)?(?:team|company|stack|tech\s+stack|backend|frontend|app|infra|infrastructure|codebase|project|startup|shop|org|product|service|site|website|api|monorepo|pipeline|ci|cd|ci/cd|homelab|home\s+lab|server|servers|nas|setup|cluster|blog|database|db|data\s+warehouse|warehouse|dotfiles|config)\s+(?:uses|is\s+(?:built\s+)?(?:on|in|with)|runs\s+on|runs|is\s+running|is|are|lives\s+on|is\s+hosted\s+on|is\s+written\s+in|relies\s+on|deploys\s+to|sits\s+on|consists\s+of)\s+(?:mostly\s+|basically\s+|entirely\s+|all\s+)?{V}", st.tech("use", lenient=True))
rule("stack", rf"^my\s+(?:main\s+|primary\s+|favou?rite\s+|go-to\s+)?(?:language|stack|setup|language\s+of\s+choice|daily\s+driver|editor|ide|os|operating\s+system|shell|terminal|browser|distro|cloud|framework|machine|dev\s+machine|work\s+machine)\s+(?:is|are)\s+(?:mostly\s+|basically\s+)?(?:a\s+|an\s+)?{V}", st.tech("use", lenient=True))
rule("stack", r"^(?:I\s+am|we\s+are)\s+(?:a|an)\s+(?P<v>\S+(?:\s+\S+)?)\s+(?:user|developer|dev|programmer|person|guy|girl|fan|shop|team|house|company|engineer)\b", st.tech("use"))
# -- preferences, likes and dislikes -----------------------------------------------
_FAV = r"(?:my\s+(?:all-time\s+|absolute\s+|current\s+|personal\s+|top\s+)?(?:favou?rite|fave|fav|go-to)|the\s+best)"
rule("likes", rf"^I\s+{ADV}(?:much\s+|far\s+|way\s+|definitely\s+|strongly\s+)?(?:prefer|favou?r)\s+{V}", r.prefers)
rule("likes", rf"^{_FAV}\s+(?P<what>[\w-]+(?:\s+[\w-]+)??)\s+(?:these\s+days\s+|right\s+now\s+|at\s+the\s+moment\s+|now\s+|currently\s+|lately\s+|of\s+all\s+time\s+|ever\s+)?(?:is|are|has\s+to\s+be|would\s+be|was)\s+(?:probably\s+|definitely\s+|still\s+|now\s+)?{V}", r.favorite)
rule("likes", rf"^{_FAV}\s+(?:is|are)\s+{V}", r.favorite)
rule("likes", r"^(?P<v>.{2,60}?)\s+(?P<be>is|are)\s+(?:still\s+)?my\s+(?:absolute\s+|all-time\s+|personal\s+|top\s+)?(?:favou?rite|fave|fav)(?:\s+(?P<kind2>[\w-]+(?:\s+[\w-]+)?))?\b", r.favorite)
rule("likes", r"^(?P<v>.{2,60}?)\s+(?:is|are)\s+my\s+(?:weakness|guilty\s+pleasure|jam|thing|comfort\s+food|happy\s+place|obsession|passion|everything|love|addiction)\b", r.likes)
rule("likes", r"^(?P<v>.{2,60}?)\s+(?:is|are)\s+(?:\w+\s+)?(?:disgusting|gross|awful|the\s+worst|terrible|horrible|revolting|vile|not\s+for\s+me|overrated)(?:\s+to\s+me)?\b", r.likes)
rule("likes", r"^(?P<v>[\w' -]{2,40}?)\s*(?:>|>>|beats|over)\s*(?P<w>[\w' -]{2,40}?)(?:\s*,?\s*(?:always|any\s+day|every\s+time|forever))?$", r.prefers)
rule("likes", rf"^{SUBJ}\s+{ADV}(?:have\s+never|never|have\s+not\s+ever|have\s+always|always)\s+(?:really\s+)?(?:liked|loved|enjoyed|been\s+a\s+fan\s+of|been\s+into|cared\s+for|hated|disliked)\s+{V}", r.likes)
rule("likes", rf"^{SUBJ}\s+{ADV}(?:do\s+not|did\s+not|never|no\s+longer|cannot|really\s+do\s+not|honestly\s+do\s+not)\s+(?:really\s+|much\s+|particularly\s+|even\s+)?(?:like|love|enjoy|care\s+for|eat|fancy|get\s+along\s+with|trust)\s+{V}", r.likes)
rule("likes", rf"^{SUBJ}\s+{ADV}(?:hate|dislike|detest|loathe|despise|cannot\s+stand|can\s+not\s+stand|cannot\s+bear|avoid|(?:have\s+)?(?:gone|went)\s+(?:right\s+|completely\s+|totally\s+|a\s+bit\s+)?off|am\s+done\s+with|am\s+over)\s+{V}", r.likes)
rule("likes", rf"^I\s+am\s+(?:not\s+(?:really\s+|much\s+of\s+|at\s+all\s+)?(?:a\s+(?:big\s+|huge\s+)?fan\s+of|into|keen\s+on|a\s+fan\s+of|fond\s+of|crazy\s+about)|no\s+fan\s+of|sick\s+of|tired\s+of)\s+{V}", r.likes)
rule("likes", rf"^{SUBJ}\s+{ADV}(?:like|love|adore|enjoy|dig|appreciate|treasure|live\s+for|cannot\s+get\s+enough\s+of|fancy|support|root\s+for|cheer\s+for|follow|collect|binge|am\s+loving|am\s+enjoying|have\s+been\s+loving|have\s+been\s+enjoying)\s+{V}", r.likes)
rule("likes", rf"^I\s+(?:have\s+)?{ADV}(?:am|become|became|been)\s+{ADV}(?:(?:a\s+)?(?:big|huge|massive|die-hard|diehard|lifelong|longtime|long-time)\s+fan\s+of|a\s+fan\s+of|fond\s+of|obsessed\s+with|crazy\s+about|passionate\s+about|nuts\s+about|mad\s+about|really\s+into|super\s+into|big\s+into|into|addicted\s+to|hooked\s+on|in\s+love\s+with)\s+{V}", r.likes)
rule("likes", r"^(?:(?:a\s+)?(?:big|huge|massive|die-hard|diehard|lifelong)\s+)?(?P<v>.{2,40}?)\s+(?:fan|lover|nerd|addict|enthusiast|junkie|fanatic)\s+here\b", r.likes)
# a change of heart in any words, marked by "anymore" and its kin
rule("likes", rf"^(?:I|we)\s+{ADV}(?:do\s+not|no\s+longer|never|am\s+not|are\s+not|stopped|quit|gave\s+up(?:\s+on)?|(?:have\s+)?(?:gone|went)\s+off|packed\s+in|dropped|ditched)\s+(?:\w+ing\s+|really\s+|much\s+|even\s+)?(?P<v>[\w' -]{{3,40}}?)\s+(?:anymore|any\s+more|altogether|for\s+good|these\s+days|now|at\s+all|totally|completely|either)\b", r.likes)
# -- plans and goals ----------------------------------------------------------------
_GOING = (
    r"(?:going|heading|flying|travell?ing|driving|moving|relocating|off|taking\s+a\s+trip|"
    r"visiting|attending|starting|getting\s+married|running|competing|presenting|speaking|"
    r"graduating|applying|quitting|leaving|retiring|resigning|having|emigrating|immigrating|"
    r"hosting|throwing|doing\s+(?:a|an|my)|sitting\s+(?:an?|my|the)\s+(?:exam|test)|taking|"
    r"interviewing|launching|opening|hiking|climbing|trekking|cycling|walking|backpacking|touring|"
    r"buying|selling|renovating|adopting|due|expecting)"
)
rule("plans", rf"^{BE}\s+{ADV}(?P<v>sitting\s+(?:an?|my|the)\s+(?:[\w-]+\s+){{0,2}}(?:exams?|tests?|finals|boards|papers|resits?)\b.*)", r.plan)
rule("plans", rf"^{BE}\s+{ADV}{_GOING}\s+(?:to\s+|in\s+|at\s+|for\s+)?(?P<v>(?!use\b|adopt\b|go\s+with\b|be\s+honest\b|ask\b|need\b|try\b|do\s+that\b|say\b|make\b|have\s+to\b|explain\b|late\b|behind\b|out\s+of\b|low\s+on\b|a\s+bit\b|through\b|crazy\b|insane\b|nuts\b).+)", r.plan)
rule("plans", rf"^{SUBJ}\s+{ADV}(?:want\s+to|would\s+like\s+to|would\s+love\s+to|need\s+to\s+(?=(?:finish|complete|pass|lose|get\s+(?:fit|in\s+shape)|save|run|learn|move|find\s+a\s+new)\b))\s*(?P<v>.+)", r.plan)
rule("plans", rf"^{SUBJ}\s+{ADV}(?:plan|intend|hope|aim|expect|am\s+planning|are\s+planning|am\s+hoping|are\s+hoping|am\s+aiming|am\s+trying|are\s+trying|am\s+saving\s+up|are\s+saving\s+up|am\s+saving|are\s+saving|am\s+preparing|are\s+preparing|am\s+training|am\s+studying|am\s+working|am\s+determined|have\s+decided|decided|am\s+thinking\s+about|are\s+thinking\s+about|am\s+considering|are\s+considering)\s+(?:on\s+|to\s+|for\s+)?(?P<v>.+)", r.plan)
rule("plans", rf"^(?:my|our)\s+(?:main\s+|big\s+|long-term\s+|short-term\s+|personal\s+)?(?:goal|plan|dream|aim|resolution|new\s+year'?s\s+resolution|objective|target|ambition)\s+(?:for\s+\S+(?:\s+\S+)?\s+)?is\s+(?:to\s+)?{V}", r.plan)
rule("plans", rf"^(?:my\s+|our\s+)?(?:goal|plan|resolution|target|aim)s?\s+for\s+\S+(?:\s+\S+)?\s*:?\s+{V}", r.plan)
rule("plans", rf"^{SUBJ}\s+(?:have|got)\s+(?:a|an|my|our)\s+(?P<v>(?:[\w-]+\s+){{0,3}}(?:{r._EVENTS}|meeting\s+with)\b.+)", r.plan)
rule("plans", rf"^(?:(?:my|our|the)\s+|(?=(?-i:[A-Z])\w+\s+(?:{r._EVENTS})))(?P<v>(?:[\w-]+\s+){{0,2}}(?:{r._EVENTS})\s+(?:is|was|got|has\s+been)\s+.*\b(?:\d+(?:st|nd|rd|th)?|jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*|monday|tuesday|wednesday|thursday|friday|saturday|sunday|next|tomorrow|week|month|year|spring|summer|fall|autumn|winter)\b.*)", r.plan)
rule("plans", rf"^{SUBJ}\s+{ADV}(?:had\s+to\s+|have\s+to\s+|need\s+to\s+)?(?:push|pushed|move|moved|reschedule|rescheduled|postpone|postponed|delay|delayed|bring|brought|change|changed)\s+(?:the|our|my)\s+(?P<v>(?:[\w-]+\s+){{0,2}}(?:{r._EVENTS})\b.+)", r.plan)
rule("plans", r"^(?P<v>(?:next|this|in)\s+(?:week|month|year|summer|winter|spring|fall|autumn|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december|\d{4})\s*,?\s+(?:I|we)\s+(?:am|are|will|plan|want|hope)\s+.+)", r.plan)
_DATE = r"(?:jan\w*|feb\w*|mar\w*|apr\w*|may|jun\w*|jul\w*|aug\w*|sep\w*|oct\w*|nov\w*|dec\w*|monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|next\s+\w+|this\s+(?:week|weekend|month|year|summer|winter|spring|fall|autumn)|\d{1,2}(?:st|nd|rd|th)?(?:\s+of)?\s+\w+|christmas|easter|new\s+year|spring|summer|fall|autumn|winter|\d{4})"
rule("plans", rf"^I\s+{ADV}(?:start|begin|finish|graduate|move|fly|leave|arrive|return|travel|retire|go\s+back|head\s+off|defend|sit|take)\b(?P<v>.*\b(?:on|in|next|this|at\s+the\s+end\s+of)\s+{_DATE}.*)", r.plan)
rule("plans", r"^(?:the\s+|our\s+|my\s+)?baby(?:'s|\s+is)\s+(?P<v>due\s+.+)", r.plan)
rule("plans", rf"^I\s+am\s+(?!\w+ing\s+(?:late|behind|out|low))(?P<v>\w+ing\b.+\b(?:on|in|next|this)\s+{_DATE}.*)", r.plan)
rule("plans", rf"^{SUBJ}\s+will\s+(?:be\s+)?(?P<v>(?:in|at|visiting|moving|travell?ing|flying|starting|graduating|running|away|off|back|getting|taking|leaving|out\s+of|on\s+(?:vacation|holiday|leave)).+)", r.plan)
# -- instructions to the assistant ------------------------------------------------------
_QUAL = (
    r"(?:please\s+|pls\s+|kindly\s+|and\s+|also\s+)*"
    r"(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+all\s+future\s+\w+|"
    r"from\s+here\s+on(?:\s+out)?|by\s+default|for\s+the\s+rest\s+of\s+(?:this\s+|our\s+)?(?:chat|conversation)|"
    r"when(?:ever)?\s+you\s+[^,]{1,80}|every\s+time\s+you\s+[^,]{1,60}|in\s+(?:all\s+)?(?:your\s+)?(?:answers|replies|responses|code)|"
    r"if\s+you\s+(?:ever\s+)?(?:give|write|suggest|show)\s+[^,]{1,60})\s*,?\s*"
)
_IMPERATIVE = (
    r"(?:answer|reply|respond|write|talk|speak|use|avoid|keep|make|include|add|mention|show|"
    r"give|cite|list|format|put|start|end|provide|convert|quote|default|stop|skip|explain|"
    r"call|address|refer|assume|remember|sign|spell|label|round|express|measure|stick|limit|"
    r"focus|prefer|suggest|recommend|tell|ask|double-check|check|treat|consider|switch|"
    r"return|output|respond|reply|translate|prioriti[sz]e|favou?r|go|be|do\s+not|never|always|"
    r"only|no)"
)
rule("instructions", rf"^(?:I\s+(?:want|need|would\s+like|would\s+prefer|prefer|expect)\s+you\s+to\s+|please\s+|pls\s+)?{_QUAL}(?P<v>{_IMPERATIVE}\b.+)", ins.instruction)
rule("instructions", rf"^(?:please\s+)?(?P<v>{_IMPERATIVE}\b.+?(?:from\s+now\s+on|going\s+forward|by\s+default|in\s+(?:the\s+)?future|every\s+time|for\s+all\s+future\s+\w+|for\s+the\s+rest\s+of\s+(?:this\s+|our\s+)?(?:chat|conversation)|in\s+(?:all\s+|every\s+)?(?:your\s+)?(?:answers?|replies|reply|responses?))(?:\s+(?:to|for)\s+me)?(?:\s+please)?)$", ins.instruction)
_STYLE = (
    r"steps|paragraphs?|tone|formal|informal|casual|format|formatting|dates?|bullet|bullets|markdown|"
    r"emojis?|jargon|units|currency|prices|rupees|euros|dollars|pounds|yen|spelling|sentences|"
    r"answers?|replies|responses?|feedback|examples|comments|blunt|honest|concise|brief|short|"
    r"simple|plain|apologi[sz]ing|apologies|sugarcoat\w*|yyyy\S*|iso|headings?|tables?|lists?|"
    r"citations?|sources|links|disclaimers|caveats|summary|summaries|tl;?dr|language|words|"
    r"vocabulary|slang|swearing|metric|imperial|celsius|fahrenheit|24-hour|12-hour|timezone|"
    r"time\s+zone|code\s+blocks?|type\s+hints|semicolons|tabs|spaces"
)
rule("instructions", rf"^(?:please\s+|kindly\s+|pls\s+)?(?P<v>(?:use|be|stop|maintain|give|write|show|format|keep|avoid|answer|reply|respond|explain|include|cite|list|sign|spell|address|round|express|put|add|start|end|skip|drop|limit|prefer|default\s+to|stick\s+to|switch\s+to|go\s+back\s+to|do\s+not|never|always)\b.{{0,160}}?\b(?:{_STYLE})\b.*)", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+)?(?P<v>(?:always|never|do\s+not\s+ever|do\s+not\s+use|never\s+use|stop\s+using|no\s+more)\s+.+)", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+)?(?P<v>(?:answer|reply|respond|write|talk|speak|communicate|explain\s+things|give\s+(?:me\s+)?(?:answers|responses|replies|explanations|examples|code))\s+(?:to\s+me\s+)?(?:only\s+|always\s+)?(?:in|using|with)\s+.+)", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+)?(?P<v>(?:keep\s+(?!it\s+(?:quick|up)\b|going\b|in\s+touch\b|me\s+posted\b)|make\s+(?:all\s+|your\s+|the\s+|any\s+)?(?:answers|responses|replies|explanations|code|examples|summaries|recipes|emails|meal\s+plans|charts|plots)\b).+)", ins.instruction)
rule("instructions", rf"^(?:please\s+|pls\s+)?(?P<v>(?:avoid|do\s+not\s+use|do\s+not\s+include|do\s+not\s+add|do\s+not\s+suggest|do\s+not\s+recommend|do\s+not\s+mention|do\s+not\s+give\s+me|leave\s+out|skip\s+the|no(?!\s+(?:problem|worries|thanks|thank|idea|clue|way|rush|pressure|big\s+deal|need|one|kidding|doubt|offense|offence|matter|luck|longer|more\s+questions)\b)(?=\s+(?:\S+\s+){{0,3}}(?:{_STYLE}|emoji\S*|explanations?|intro\S*|preamble|fluff|filler|waffle|small\s+talk|disclaimers?|warnings?|apolog\S+|exclamation\S*|caps|swearing|slang|jargon|spoilers?|code|comments|bold|italics|hashtags|links|sources|references|onions?|garlic|nuts|pork|beef|meat|dairy|gluten|sugar|alcohol|spice|spicy\s+food)\b|\s+.+?\s+(?:please|pls|plz|ever|in\s+(?:your\s+)?(?:answers?|replies|responses))))\s+.+)", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+)?(?P<v>use\s+(?:metric|imperial|celsius|fahrenheit|british|american|us|uk|australian|canadian|24-hour|12-hour|oxford|iso|european|plain|simple|bullet|markdown|tabs|spaces|type\s+hints|\w+\s+(?:units|spelling|english|format|dates|style)).*)", ins.instruction)
rule("instructions", r"^(?:please\s+)?(?P<v>(?:explain|talk|write)\s+(?:things\s+|everything\s+|it\s+|concepts\s+)?(?:to\s+me\s+)?(?:like|as\s+though|simply|in\s+simple\s+terms|in\s+plain\s+english|step\s+by\s+step|for\s+a\s+beginner).*)", ins.instruction)
rule("instructions", r"^(?:please\s+)?(?P<v>(?:address|call)\s+me\s+(?:informally|formally|by\s+my\s+(?:first|last)\s+name|as\s+\w+).*)", ins.instruction)
rule("instructions", rf"^I\s+(?:want|need|would\s+like|would\s+prefer|expect)\s+you\s+to\s+{V}", ins.instruction)
rule("instructions", r"^I\s+would\s+(?:rather|prefer|much\s+rather)\s+(?:that\s+|if\s+)?you\s+(?:just\s+)?(?P<v>(?:gave|give|used|use|kept|keep|wrote|write|answered|answer|replied|reply|talked|talk|went|go|made|make|stuck|stick|called|call)\b.{3,140})$", ins.instruction)
rule("instructions", r"^I\s+(?:prefer|like|want|need|would\s+like)\s+(?P<v>(?:short|shorter|brief|concise|detailed|thorough|long|longer|in-depth|bullet[- ]point|step[- ]by[- ]step|simple|plain|\w+,\s+\w+)\s+(?:answers|responses|replies|explanations|summaries).*)", ins.instruction)
rule("instructions", r"^(?P<v>(?:\w+\s+){0,3}\w+\s+(?:commands|code|examples|units|answers|syntax|snippets|spelling))\s+(?:please|pls|plz)$", ins.instruction)
rule("instructions", r"^(?P<v>(?:[\w-]+\s+){0,3}(?:points|lists|tables|bullets|paragraphs|format|markdown|prose|emojis?|spelling|english|celsius|fahrenheit|metric|imperial|answers|replies|responses))\s+(?:please|pls|plz|for\s+me|only)\b", ins.instruction)
# a standing instruction without a verb: "Celsius from here on", "bullet points from now on"
rule("instructions", r"^(?P<v>[\w/ -]{2,40}?)\s+(?:from\s+now\s+on|from\s+here\s+on(?:\s+out)?|going\s+forward|now\s+onwards?|from\s+now|by\s+default)(?:\s*,.*)?$", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+|can\s+you\s+|could\s+you\s+)?(?P<v>(?:switch|change|set|put|move|flip)\s+(?:me|it|things|everything|(?:the|your|my)\s+\w+)?\s*(?:back\s+|over\s+)?(?:to|on|into)\s+(?:dark|light|night)\s+(?:mode|theme)\b.*)", ins.instruction)
rule("instructions", r"^(?:let's|lets|let\s+us)\s+(?P<v>(?:go\s+back\s+to|switch\s+(?:back\s+)?to|stick\s+(?:to|with)|use|do|keep\s+it|go\s+with|go)\s+.{3,100})$", ins.instruction)
# segment lets a polite question through only when it sets a standing instruction
rule("instructions", r"^(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|pls\s+|ever\s+)?(?P<v>.{3,140}?)(?:\s+please)?$", ins.instruction)
# a standing instruction in any words, marked as one by "from now on" and its kin
rule("instructions", r"^(?:(?:now|so|and|but|ok|okay|also)\s+)*(?:(?:from\s+now(?:\s+on)?|(?:now\s+)?onwards?|henceforth|going\s+forward|from\s+here\s+on(?:\s+out)?|in\s+future)\s*,?\s+)(?:please\s+|pls\s+|kindly\s+)?(?:you\s+can\s+|can\s+you\s+|you\s+(?:will\s+|must\s+|should\s+)?(?=answer|reply|respond|write|talk|speak|use|give|call|keep))?(?P<v>(?!I\b|we\b).{3,120})$", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+|kindly\s+)?(?:you\s+can\s+|let's\s+|lets\s+)?(?P<v>(?!I\b|we\b)(?:reply|answer|respond|talk|speak|write|go|give|use|keep|do|switch|stick|continue|carry\s+on|stay)\b.{3,120}?)(?:\s+only)?\s*,?\s+(?:from\s+now(?:\s+on)?|(?:from\s+)?now\s+onwards?|onwards|going\s+forward|from\s+here(?:\s+on)?(?:\s+out)?)(?:\s*,.*)?$", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+)?(?P<v>(?:distances|weights?|temperatures?|heights?|prices|amounts|measurements|times|dates)\s+(?:in|as)\s+\S.{0,60})$", ins.instruction)
rule("instructions", r"^(?:now\s+|so\s+)?(?:please\s+|pls\s+)?(?:you\s+can\s+)?(?P<v>(?:talk|speak|write|chat)\s+(?:(?:to|with)\s+me\s+)?(?:more\s+|very\s+|a\s+bit\s+)?(?:casual|casually|formal|formally|informal|informally|politely|plainly|simply|directly|bluntly|professionally)\b.*)", ins.instruction)
rule("instructions", r"^(?:please\s+|pls\s+)?(?P<v>(?:reply|answer|respond|write|talk|speak)\s+(?:to\s+)?me\s+(?:always\s+|only\s+)?in\s+\S.*)", ins.instruction)
# -- decisions (docs/design/extraction.md#what-the-rules-capture) ----------------------
rule("decision", rf"^I\s+will\s+(?:be\s+)?(?:use|using)\s+{V}", r.simple("decision", "decision:{}", episodic=True))
rule("decision", rf"^(?:I\s+have\s+|we\s+have\s+|I\s+|we\s+)?(?:chose|chosen|decided\s+(?:on|against)|picked|selected|went\s+with|opted\s+for|settled\s+on|gone\s+with|am\s+going\s+with|are\s+going\s+with)\s+{V}", r.simple("decision", "decision:{}", episodic=True))
rule("decision", rf"^(?:I\s+have\s+|I\s+)decided\s+to\s+{V}", r.simple("decision", "decision:{}", episodic=True))
rule("decision", rf"^{BE}\s+going\s+to\s+(?:use|adopt|go\s+with)\s+{V}", r.simple("decision", "decision:{}", episodic=True))
rule("education", rf"^I\s+{ADV}(?:am\s+after\s+)?(?:transferred|transferring|switching|switched|moving|moved)\s+(?:over\s+)?to\s+(?P<v>(?-i:[A-Z])\S*(?:\s+(?-i:[A-Z])\S*)*)(?=.*\b(?:uni|university|college|school|course|degree|program|programme|term|semester|doing|studying|major)\b)", r.simple("education", "school", single=True))
# -- hobbies and routines -----------------------------------------------------------
rule("hobbies", rf"^{SUBJ}\s+{ADV}(?:have\s+been\s+|am\s+|are\s+)?(?P<v>(?:play|playing)\s+(?!it\b|this\b|that\b|with\s+(?:it|this|that)\b|around\b).+)", r.hobby())
rule("hobbies", rf"^{SUBJ}\s+{ADV}(?:go|went|love\s+going|like\s+going|enjoy\s+going|have\s+been\s+going)\s+(?P<v>\w+ing\b.*)", r.hobby())
rule("hobbies", rf"^{SUBJ}\s+{ADV}(?:go|head)\s+to\s+(?P<v>(?:the\s+|a\s+|my\s+)?(?:\w+\s+)?(?:gym|yoga|pilates|church|mosque|temple|synagogue|pool|climbing\s+gym|dance\s+class|choir|book\s+club|farmers\s+market|sauna|spin\s+class|crossfit|boxing|karate|jiu[- ]jitsu|judo|therapy|office|bed|sleep|class|classes|practice|rehearsal|mass|service|meetup|parkrun|run\s+club|running\s+club).*)", r.hobby("routines"))
rule("hobbies", rf"^{SUBJ}\s+{ADV}(?:have\s+been\s+|am\s+|are\s+)?(?:do|doing|practi[cs]e|practi[cs]ing|train|training\s+in|teach|coach|compete\s+in)\s+(?P<v>(?:\w+\s+)?(?:yoga|pilates|crossfit|karate|judo|jiu[- ]jitsu|bjj|taekwondo|boxing|kickboxing|muay\s+thai|meditation|tai\s+chi|calisthenics|aikido|kung\s+fu|ballet|salsa|tango|parkour|archery|fencing|gymnastics|triathlons?|marathons?|ultras?|weightlifting|powerlifting|hiit|spinning|zumba|improv|stand-up|standup|woodworking|pottery|ceramics|photography|calligraphy|origami|embroidery|crosswords?|sudoku|puzzles|volunteer\s+work|karaoke|ballroom|swing\s+dance|rock\s+climbing|bouldering|mma|wrestling|rowing|sailing|cosplay|speedcubing|gardening|baking|birding|birdwatching|astronomy|astrophotography|genealogy|ham\s+radio|3d\s+printing|lego|model\s+trains|warhammer|d&d|dnd|dungeons\s+&\s+dragons).*)", r.hobby())
rule("hobbies", rf"^my\s+(?:main\s+|favou?rite\s+|big\s+)?(?:hobby|hobbies|passion|pastime|side\s+hustle|weekend\s+thing|thing)\s+(?:is|are|include|includes|these\s+days\s+is)\s+{V}", r.hobby())
rule("hobbies", r"^(?:in\s+my\s+(?:free|spare|down)\s+time|(?:on\s+)?(?:the\s+)?weekends?|after\s+work|before\s+work|every\s+(?:morning|day|evening|night|weekend|week|sunday|saturday|monday|summer|winter|year)|most\s+(?:mornings|evenings|nights|weekends|days)|each\s+(?:morning|day|evening|weekend)|twice\s+a\s+week|once\s+a\s+week|daily|(?:on\s+)?(?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays)|(?:in\s+the\s+)?(?:mornings|evenings))\s*,?\s+(?:I|we)\s+(?P<v>.+)", r.hobby("routines"))
rule("hobbies", rf"^I\s+{ADV}(?P<v>(?:wake\s+up|get\s+up|go\s+to\s+bed|go\s+to\s+sleep|start\s+work|finish\s+work|eat\s+(?:breakfast|lunch|dinner)|commute|walk\s+to\s+work|bike\s+to\s+work|cycle\s+to\s+work|drive\s+to\s+work|take\s+the\s+(?:train|bus|subway|tube|metro)|work\s+out|exercise|meditate|journal|fast|run|swim|lift|jog|walk|cycle|bike|hike|climb|surf|ski|knit|crochet|paint|draw|sketch|bake|cook|garden|sew|quilt|brew|fish|hunt|sail|row|dance|sing|collect|read|blog|vlog|stream|volunteer|foster|tinker|skate|skateboard|snowboard|bowl|box|golf|kayak|paddleboard|dive|scuba\s+dive|camp|backpack|boulder|birdwatch|write\s+(?:poetry|poems|fiction|short\s+stories|songs|a\s+blog|novels))\b.*)", r.hobby())
rule("hobbies", r"^I\s+am\s+(?:part\s+of|a\s+member\s+of|in|on)\s+(?:a|an|the|our|my)\s+(?P<v>(?:[\w-]+\s+){0,3}(?:club|team|league|choir|band|group|society|orchestra|crew|guild|troupe|circle|ensemble|quartet)\b.*)", r.hobby())
rule("hobbies", r"^I\s+am\s+(?:writing|building|restoring|knitting|making|learning\s+to|working\s+on)\s+(?P<v>(?:a|an|my)\s+(?:\w+\s+){0,3}(?:novel|book|memoir|game|app|boat|car|quilt|sweater|cabin|guitar|album|podcast|website|blog|robot|keyboard|garden)\b.*)", r.hobby())
rule("hobbies", rf"^I\s+{ADV}(?P<v>(?:usually|always|never|typically|often|frequently|regularly|rarely|sometimes|normally|tend\s+to)\s+.+)", r.hobby("pattern"))
rule("hobbies", rf"^I\s+used\s+to\s+{V}", r.simple("hobbies", "past:{}"))
rule("hobbies", rf"^weekends\s+are\s+(?:for|all\s+about)\s+{V}", r.hobby())
rule("hobbies", rf"^I\s+{ADV}(?:do|practi[cs]e|play|take|go\s+to)\s+(?P<v>.+?\s+(?:\d+|once|twice|three|four|five|several|a\s+few)\s+times?\s+(?:a|per|every)\s+(?:week|month|day|year)\b.*|.+?\s+(?:every|each)\s+(?:week|weekend|morning|evening|day|night|sunday|saturday|monday|tuesday|wednesday|thursday|friday)\b.*)", r.hobby())
rule("hobbies", rf"^I\s+{ADV}take\s+(?P<v>(?:[\w-]+\s+){{1,3}}(?:classes|lessons|courses))\b", r.hobby())
rule("hobbies", r"^I\s+have\s+been\s+(?P<v>\w+ing\b.+?)\s+(?:for|since)\s+(?:\d+|a|an|two|three|four|five|six|several|many|a\s+few|a\s+couple|years|ages|over|almost|nearly|about|more\s+than)\b.*", r.hobby())
rule("hobbies", rf"^I\s+{ADV}(?:build|make|restore|collect|brew|grow|race|breed|fly|carve|knit|sew|forage|repair|fix\s+up|refurbish|bake|paint|draw|sculpt|write|compose|record|produce)\s+(?P<v>(?!it\b|this\b|that\b|a\s+(?:list|plan|summary)\b).+)", r.hobby())
rule("languages", rf"^(?:on\s+top\s+of\s+\w+\s*,?\s*)?I\s+(?:have\s+)?{ADV}(?:started|start|begin|took\s+up|picked\s+up|got\s+into|began|am\s+getting\s+into|am\s+starting)\s+(?:learning\s+|studying\s+)?{V}", r.language)
rule("hobbies", rf"^I\s+(?:have\s+)?{ADV}(?:started|took\s+up|picked\s+up|got\s+(?:really\s+|properly\s+|well\s+|big\s+)?into|began|am\s+getting\s+into|taken\s+up|been\s+getting\s+into|gotten\s+into|been\s+into)\s+(?P<v>(?!a\s+new\s+job|working|at\b|with\b).+)", r.hobby())
# -- possessions ----------------------------------------------------------------------
rule("possessions", rf"^I\s+{ADV}(?:shoot|film|record|type|game|write|cook|play|edit|work|draw|paint)\s+(?:on|with)\s+(?:a|an|my)\s+(?P<v>(?:[\w-]+\s+)?(?-i:[A-Z0-9]).+)", r.possession)
rule("health", rf"^I\s+{ADV}(?:wear|use|have|need|rely\s+on)\s+(?P<v>(?:a\s+|an\s+|two\s+)?(?:hearing\s+aids?|glasses|contacts|contact\s+lenses|a\s+cpap|cpap|a\s+prosthetic|prosthetic|braces|a\s+wheelchair|wheelchair|a\s+cane|cane|crutches|an\s+insulin\s+pump|insulin\s+pump|a\s+pacemaker|a\s+cochlear\s+implant|a\s+walker|a\s+stoma|an\s+ostomy\s+bag)\b.*)", r.simple("health", "health:{}"))
rule("possessions", rf"^(?:{_HAVE_VERB}|I\s+{ADV}(?:drive|ride|rent|lease|play\s+on|type\s+on|work\s+on|game\s+on|am\s+driving|am\s+renting|just\s+bought|recently\s+bought|finally\s+bought|splurged\s+on|wear))\s+(?:{_NUM}\s+|the\s+|an?\s+)?{V}", r.possession)
rule("possessions", r"^(?:my|our)\s+(?:new\s+|old\s+|current\s+|first\s+|main\s+|work\s+|personal\s+|family\s+)?(?P<what>[\w-]+)\s+is\s+(?:a|an|the)\s+(?P<v>(?:\d{4}\s+)?(?:[a-z-]+\s+){0,2}(?-i:[A-Z0-9]).*)", r.possession)
# -- identity, last: "I'm a/an X", "I'm Maria", durable traits -----------------------
rule("identity", rf"^I\s+am\s+(?P<v>{_TRAIT_WORDS})\b", r.simple("identity", "trait:{}"))
rule("identity", r"^I\s+am\s+(?:part\s+|half\s+)?(?P<v>(?-i:[A-Z])[\w'-]+(?:\s+(?-i:[A-Z])[\w'-]+)?)\s+on\s+my\s+(?:mum|mom|mam|dad|father|mother|nan|grandmother|grandfather)(?:'s|s)?\s+side\b", r.simple("identity", "identity:{}"))
rule("work", r"^(?:(?:and|but|so)\s+)?(?P<v>(?:a\s+|an\s+)?[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3})\s+(?:now|these\s+days|nowadays)$", u.bare_job)
rule("work", rf"^I\s+am\s+{ADV}(?:now\s+)?(?P<v>[a-z][\w-]*(?:\s+[a-z][\w-]*){{0,2}}(?:\s+(?:in|at|for|with)\s+[^,]+)?)(?:\s*,.*)?$", u.bare_job)
rule("identity", r"^as\s+(?:a\s+bit\s+of\s+|something\s+of\s+)?(?:an?|the)\s+(?P<v>[\w -]{2,40}?)\s*,?\s+(?:I|we)\b", u.as_a)
rule("identity", rf"^I\s+(?:am|have\s+been|was|used\s+to\s+be)\s+{ADV}(?:a|an|the(?:\s+only|\s+sole|\s+lead|\s+main|\s+head)?)\s+{V}", r.im_a)
rule("identity", r"^I\s+am\s+(?P<v>(?-i:[A-Z][a-z]+)\s+(?-i:[A-Z][a-z]+))(?=\s*$|\s*,)", r.name_of("name", "User's name is {}"))
rule("identity", rf"^I\s+am\s+{NAME}(?=\s*(?:,|$|!|[\u2014\u2013]|\s+-\s|\s+(?:and|from|here|by)\b))", r.name_of("name", "User's name is {}"))
rule("identity", rf"^I\s+am\s+(?P<v>(?:{'|'.join(sorted(lx.NATIONALITIES, key=len, reverse=True))}))(?:\s+\w+)?\s*$", r.simple("identity", "identity:{}"))
rule("identity", r"^I\s+am\s+(?:half|part|a\s+proud|proudly)\s+(?P<v>\w+)\s*$", r.simple("identity", "identity:{}"))


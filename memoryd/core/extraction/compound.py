"""One memory per attribute: a job said with its workplace is two facts.

"I'm a nurse at the Royal Brisbane" states a job title and an employer. Stored as one
memory it answers to one attribute only, so the next employer ("swapped to the Mater
now") retires nothing and the old hospital stays current beside the new one; a
promotion ("got made ward manager") would retire the employer with the title. ``parts``
cuts such a fact into the title ("User is a nurse, doing night shifts this month") and
the workplace ("User works at the Royal Brisbane"), each under its own single-valued
attribute, so either can change alone. Pure and stdlib-only.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Protocol, TypeVar

from memoryd.core.extraction.rules import _ORG, _is_job
from memoryd.core.extraction.values import slugify


class _Fact(Protocol):
    """What of ``extraction.Fact`` this reads (the package imports this module)."""

    @property
    def attribute(self) -> str | None: ...
    @property
    def source(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def replaces(self) -> tuple[str, ...]: ...
    @property
    def is_retraction(self) -> bool: ...


F = TypeVar("F", bound=_Fact)

__all__ = ["parts"]

#: a workplace is a proper name, not a season or a day ("a nurse at Christmas")
_WHEN = re.compile(
    r"(?:the\s+)?(?:christmas|easter|weekends?|night|nights|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|"
    r"september|october|november|december|uni|university|school|home|work)\b",
    re.IGNORECASE,
)
#: "User is a nurse at the Royal Brisbane, ...", "User is working as backend developer
#: at Infosys, Bangalore", "User works as a receptionist for Hilton"
_ROLE_AT = re.compile(
    r"^User\s+(?P<lead>(?:is|works)\s+(?:working\s+)?(?:as\s+)?(?:an?\s+)?)"
    r"(?P<role>[^,;]+?)\s+(?P<prep>at|for|with)\s+"
    rf"(?P<org>{_ORG.pattern})(?P<rest>(?:[\s,;].*)?)$"
)
#: "User works at Accenture as a call center agent in Taguig"
_AT_AS = re.compile(
    rf"^User\s+works\s+(?P<prep>at|for|with)\s+(?P<org>{_ORG.pattern})\s+as\s+"
    r"(?P<article>(?:an?\s+)?)(?P<role>[^,;]+?)(?P<rest>(?:[,;].*)?)$"
)
#: roles that are no employment ("a client at Barclays", "a student at Leeds Uni"), and
#: a second role said beside the first ("a mentor at Code First Girls too")
_NOT_EMPLOYED = frozenset(
    re.findall(
        r"\w+",
        "client customer patient member volunteer mentor guest regular fan student pupil "
        "supporter subscriber resident tenant parent",
    )
)
_ALSO = re.compile(r"\b(?:too|also|as\s+well|on\s+the\s+side|on\s+weekends)\b", re.IGNORECASE)
_ROLE_END = re.compile(r"\s+(?:in|at|for|with|based|on|from|since)\s+", re.IGNORECASE)
_WORK = frozenset({"job_title", "employer"})


def parts(fact: F) -> list[F]:
    """``fact`` as its job title and its employer when it states both, else itself."""
    if fact.attribute not in _WORK or fact.source != "user" or fact.is_retraction:
        return [fact]
    m = _ROLE_AT.match(fact.content)
    if m is not None:
        role, org, rest = m["role"].strip(), m["org"].strip(), m["rest"]
        title = f"User {m['lead']}{role}{rest}"
    else:
        m = _AT_AS.match(fact.content)
        if m is None:
            return [fact]
        org, said = m["org"].strip(), m["role"].strip()
        role = _ROLE_END.split(said, maxsplit=1)[0]  # "call center agent in Taguig"
        rest = said[len(role) :] + m["rest"]
        title = f"User works as {m['article']}{role}{rest}"
    role_low = role.lower()
    head = role_low.split()[-1] if role_low.split() else ""
    if not head or not _is_job(role_low, head) or _WHEN.fullmatch(org) or len(org) < 2:
        return [fact]
    if head in _NOT_EMPLOYED or _ALSO.search(fact.content):
        return [fact]
    prep = m["prep"].lower()
    title = " ".join(title.split()).rstrip(" ,;:.")
    whole: Any = fact  # a dataclass (``extraction.Fact``)
    job: F = dataclasses.replace(
        whole,
        key=f"occupation:{slugify(role, 60)}",
        content=title,
        slot="occupation",
        single=True,
        replaces=tuple(r for r in fact.replaces if r != "employer"),
        attribute="job_title",
    )
    employer: F = dataclasses.replace(
        whole,
        key=f"employer:{slugify(org, 60)}",
        content=f"User works {prep} {org}",
        slot="employer",
        single=True,
        replaces=(),
        attribute="employer",
    )
    return [job, employer]

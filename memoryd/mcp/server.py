"""The memory tools over MCP (docs/design/interfaces.md#mcp), built on the official
SDK's ``MCPServer``.

Three tools, each registered twice (``omniroute_memory_*`` so existing OmniRoute
clients keep working, and ``memory_*``): search, add, clear. They call the engine and
return typed pydantic models, so clients get ``structured_content`` as well as text.

Who is calling decides whose memories a call may touch (a ``Principal``): a client key
scopes every call to its own id (an ``apiKeyId`` naming anyone else is a tool error);
the admin must name the owner with ``apiKeyId``. Over stdio the principal is fixed when
the process starts (``memoryd mcp --api-key`` / ``--admin``); over HTTP the ``/mcp``
endpoint (``memoryd.mcp.http``) authenticates each request's Bearer credential and
stores the principal in the ASGI scope, where a tool finds it through the SDK's
per-message request context. Bad input is a tool error (``isError``) naming the field,
never a crash.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import Field

from memoryd import __version__
from memoryd.core.subjects import MAX_SUBJECT_CHARS, MAX_SUBJECTS
from memoryd.engine import MemoryEngine
from memoryd.engine.retrieval import MAX_LIMIT
from memoryd.engine.validation import require_owner
from memoryd.errors import MemorydError
from memoryd.mcp.results import (
    AddResult,
    ClearResult,
    ForgetResult,
    McpMemory,
    ProfileResult,
    SearchHit,
    SearchResult,
    profile_memory,
)
from memoryd.models import GLOBAL_OWNER, MemoryType, NewMemory, parse_iso, utcnow, written_via

#: The ASGI scope key under which the HTTP endpoint leaves the authenticated caller.
PRINCIPAL_SCOPE_KEY = "memoryd.mcp.principal"
#: The budget of a search when neither the call nor the settings give one (memory off).
FALLBACK_MAX_TOKENS = 2000
PREFIX = "omniroute_"

TypeName = Literal["factual", "episodic", "procedural", "semantic"]
assert set(get_args(TypeName)) == {t.value for t in MemoryType}


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: a client key (``key_id``) or the admin (``key_id is None``)."""

    key_id: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.key_id is None


ADMIN = Principal()
#: Where a stdio server gets its caller (re-evaluated per call, so a revoke is seen).
PrincipalSource = Callable[[], Principal]


def key_principal(engine: MemoryEngine, secret: str) -> PrincipalSource:
    """The caller behind a client key's secret, re-checked on every call."""

    def current() -> Principal:
        key = engine.keys.authenticate(secret)
        if key is None:
            raise ToolError("unauthorized: the API key is invalid or was revoked")
        return Principal(key.id)

    return current


# -- results -----------------------------------------------------------------------------


#: An end user of the key (a client key may name any end user of its own key).
UserArg = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=200,
        description="End user of the key: search sees theirs and the key's shared "
        "memories; add stores for them. Omit: search sees every end user's, add is shared.",
    ),
]


# -- arguments ---------------------------------------------------------------------------

OwnerArg = Annotated[
    str | None,
    Field(
        description=(
            "Owner: the client API key id whose memories to use. With a client key as the "
            "credential, omit it (or pass that key's own id). With the admin token it is "
            "required; 'global' is the shared pool."
        )
    ),
]
TypeFilterArg = Annotated[TypeName | None, Field(description="Only memories of this type.")]


@contextmanager
def _tool_errors() -> Iterator[None]:
    """Engine errors (bad input) become tool errors with the engine's message."""
    try:
        yield
    except MemorydError as exc:
        raise ToolError(exc.message) from None


def _caller(ctx: Context, fallback: PrincipalSource | None) -> Principal:
    request = ctx.request_context.request
    if request is not None:  # HTTP: the /mcp endpoint authenticated this very request
        scope = getattr(request, "scope", None)
        found = scope.get(PRINCIPAL_SCOPE_KEY) if isinstance(scope, dict) else None
        if isinstance(found, Principal):
            return found
    elif fallback is not None:  # stdio: fixed when the process started
        return fallback()
    raise ToolError("unauthorized: send Authorization: Bearer <client key or admin token>")


def _owner(caller: Principal, requested: str | None, *, write: bool) -> str:
    """The one owner a call acts on."""
    if requested is not None:
        with _tool_errors():
            require_owner(requested)
    if caller.is_admin:
        if requested is None:
            raise ToolError("apiKeyId: required with the admin token (name the owner)")
        return requested
    if requested is not None and requested != caller.key_id:
        raise ToolError(
            f"apiKeyId: {requested!r} is not the authenticated API key; "
            "a client key may only use its own memories"
        )
    assert caller.key_id is not None
    if write and caller.key_id == GLOBAL_OWNER:  # unreachable for valid keys; belt and braces
        raise ToolError("apiKeyId: only the admin may write the shared 'global' pool")
    return caller.key_id


class MemoryTools:
    """The tool bodies over one engine. Sync: the SDK runs them on a worker thread."""

    def __init__(self, engine: MemoryEngine, principal: PrincipalSource | None) -> None:
        self.engine = engine
        self.principal = principal

    def search(
        self,
        ctx: Context,
        apiKeyId: OwnerArg = None,
        query: Annotated[
            str | None, Field(description="What to look for; omit for the most recent.")
        ] = None,
        type: TypeFilterArg = None,
        maxTokens: Annotated[
            int | None,
            Field(ge=1, le=8000, description="Token budget (default: the memory settings)."),
        ] = None,
        limit: Annotated[
            int | None, Field(ge=1, le=MAX_LIMIT, description="At most this many memories.")
        ] = None,
        userId: UserArg = None,
    ) -> SearchResult:
        owner = _owner(_caller(ctx, self.principal), apiKeyId, write=False)
        settings = self.engine.settings.get()
        if maxTokens is not None:
            budget = maxTokens
        else:
            budget = settings.max_tokens if settings.enabled else FALLBACK_MAX_TOKENS
        if budget <= 0:  # a configured budget of 0 means "inject nothing"
            return SearchResult(memories=[], count=0, totalTokens=0)
        with _tool_errors():
            hits = self.engine.retrieve(
                owner,
                query,
                max_tokens=budget,
                # The type filter applies to the ranked results: fetch wide, then cut.
                limit=MAX_LIMIT if type is not None else limit,
                settings=settings,
                user_id=userId,
            )
        if type is not None:
            hits = [h for h in hits if h.memory.type.value == type]
        if limit is not None:
            hits = hits[:limit]
        memories = [
            SearchHit(
                **McpMemory.of(h.memory).model_dump(), score=h.score, tokens=h.tokens, tier=h.tier
            )
            for h in hits
        ]
        total = sum(h.tokens for h in hits)
        return SearchResult(memories=memories, count=len(memories), totalTokens=total)

    def add(
        self,
        ctx: Context,
        *,
        apiKeyId: OwnerArg = None,
        sessionId: Annotated[
            str | None, Field(description="Conversation id under the owner.")
        ] = None,
        content: Annotated[str, Field(min_length=1, description="The fact to remember.")],
        type: Annotated[TypeName, Field(description="Memory type.")] = "factual",
        key: Annotated[
            str | None,
            Field(
                min_length=1,
                description="Upsert key, unique per owner, e.g. pref:language; derived from "
                "the content when omitted (the result's memory.key).",
            ),
        ] = None,
        metadata: Annotated[dict[str, Any] | None, Field(description="Any JSON object.")] = None,
        userId: UserArg = None,
        subjects: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_SUBJECT_CHARS)]] | None,
            Field(
                max_length=MAX_SUBJECTS,
                description='Who it is about: "user", or the people it names (e.g. "Anna").',
            ),
        ] = None,
    ) -> AddResult:
        caller = _caller(ctx, self.principal)
        owner = _owner(caller, apiKeyId, write=True)
        with _tool_errors():
            if not caller.is_admin:  # a client key's own writes count against its quotas
                size = len(content.encode()) + len(json.dumps(metadata or {}).encode())
                self.engine.quotas.check(owner, [size])
            memory, _ = self.engine.create(
                NewMemory(
                    api_key_id=owner,
                    content=content,
                    key=key,
                    type=MemoryType(type),
                    session_id=sessionId or "",
                    metadata=written_via(
                        metadata
                        if subjects is None
                        else {
                            **(metadata or {}),
                            "subjects": [x.strip() for x in subjects if x.strip()],
                        },
                        "mcp",
                        utcnow(),
                    ),
                    user_id=userId or "",
                )
            )
        return AddResult(memory=McpMemory.of(memory))

    def clear(
        self,
        ctx: Context,
        apiKeyId: OwnerArg = None,
        type: TypeFilterArg = None,
        olderThan: Annotated[
            str | None,
            Field(description="ISO-8601 date: only memories created before it."),
        ] = None,
        userId: UserArg = None,
    ) -> ClearResult:
        owner = _owner(_caller(ctx, self.principal), apiKeyId, write=True)
        cutoff = None
        if olderThan is not None:
            try:
                cutoff = parse_iso(olderThan)
            except ValueError:
                raise ToolError(
                    f"olderThan: not a valid ISO-8601 date: {olderThan!r} "
                    "(e.g. 2025-01-01 or 2025-01-01T00:00:00Z)"
                ) from None
        with _tool_errors():
            count = self.engine.clear(
                owner, type=MemoryType(type) if type else None, older_than=cutoff, user_id=userId
            )
        return ClearResult(deletedCount=count)

    def forget(
        self,
        ctx: Context,
        userId: Annotated[
            str,
            Field(min_length=1, max_length=200, description="The end user of the key to erase."),
        ],
        apiKeyId: OwnerArg = None,
    ) -> ForgetResult:
        owner = _owner(_caller(ctx, self.principal), apiKeyId, write=True)
        with _tool_errors():
            receipt = self.engine.forget(owner, user_id=userId)
        return ForgetResult.model_validate({"erasure": receipt.to_dict()})

    def pin(
        self,
        ctx: Context,
        memoryId: Annotated[str, Field(min_length=1, max_length=200, description="Its id.")],
        pinned: Annotated[
            bool | None,
            Field(
                description="true: in every request (the profile); false: never in the "
                "profile, even a standing instruction; null: its attribute decides."
            ),
        ] = True,
        apiKeyId: OwnerArg = None,
        userId: UserArg = None,
    ) -> AddResult:
        owner = _owner(_caller(ctx, self.principal), apiKeyId, write=True)
        with _tool_errors():
            found = self.engine.get(memoryId, owner=owner)
            if found is None or (userId is not None and found.user_id != userId):
                raise ToolError("no memory with this id for this owner")
            memory = self.engine.pin(memoryId, pinned, owner=owner)
        if memory is None:
            raise ToolError("no memory with this id for this owner")
        return AddResult(memory=McpMemory.of(memory))

    def profile(
        self,
        ctx: Context,
        apiKeyId: OwnerArg = None,
        userId: UserArg = None,
        query: Annotated[
            str, Field(max_length=4000, description="A request's words (its advice topic).")
        ] = "",
    ) -> ProfileResult:
        owner = _owner(_caller(ctx, self.principal), apiKeyId, write=False)
        with _tool_errors():
            found = self.engine.profile(owner, query, user_id=userId or "")
        return ProfileResult(
            memories=[profile_memory(h) for h in found.hits],
            totalTokens=found.tokens,
            budgetMaxTokens=found.budget_max_tokens,
            dropped=[profile_memory(h) for h in found.dropped],
        )


_DESCRIPTIONS = {
    "memory_search": (
        "Search the owner's long-term memories (ranked with the configured strategy: "
        "recent, semantic or hybrid) and return the best ones within a token budget."
    ),
    "memory_add": (
        "Store a memory for the owner. Upserts on (owner, key): the same key replaces "
        "the earlier content."
    ),
    "memory_clear": (
        "Delete every memory of the owner that matches the filters (type, created before "
        "olderThan). Without filters it deletes all of the owner's memories."
    ),
    "memory_forget": (
        "Erase one end user of the key: every memory of theirs with its history, keyword "
        "entries, vectors and queued extraction. Returns a receipt (counts, not content)."
    ),
    "memory_pin": (
        "Pin a memory into the owner's profile, which every request carries whatever it "
        "asks (pinned=true), keep it out of the profile (false), or let its attribute "
        "decide (null)."
    ),
    "memory_profile": (
        "The owner's (end user's) profile: the standing instructions, name, role and "
        "constraints every request carries, within the profile's token budget."
    ),
}
_ANNOTATIONS = {
    "memory_search": ToolAnnotations(read_only_hint=True, open_world_hint=False),
    "memory_add": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    ),
    "memory_clear": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
    "memory_forget": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
    "memory_pin": ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    ),
    "memory_profile": ToolAnnotations(read_only_hint=True, open_world_hint=False),
}
#: OmniRoute's three tools answer under its names too; memoryd's own only under theirs.
_OMNIROUTE = ("memory_search", "memory_add", "memory_clear")
TOOL_NAMES = tuple(
    p + n for n in _DESCRIPTIONS for p in ((PREFIX, "") if n in _OMNIROUTE else ("",))
)


def _tidy_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Optional arguments as plain typed properties (``{"type": "integer", ...}``, not
    ``anyOf [..., null]`` with a null default), and no generated titles."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
        options = prop.get("anyOf")
        if "default" in prop and prop["default"] is None and isinstance(options, list):
            rest = [o for o in options if o != {"type": "null"}]
            if len(rest) == 1:
                del prop["anyOf"], prop["default"]
                prop.update(rest[0])
    return schema


@contextmanager
def _no_global_logging_setup() -> Iterator[None]:
    """``MCPServer()`` calls ``logging.basicConfig``; keep it from configuring the root
    logger of a process that has not (the host decides how memoryd logs)."""
    root = logging.getLogger()
    placeholder = logging.NullHandler()
    root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeHandler(placeholder)


def build_server(engine: MemoryEngine, *, principal: PrincipalSource | None = None) -> MCPServer:
    """The MCP server with the memory tools, each under two names. ``principal``: the
    fixed caller of a stdio server; without it each call must come through the HTTP
    endpoint."""
    bodies = MemoryTools(engine, principal)
    functions: dict[str, Callable[..., Any]] = {
        "memory_search": bodies.search,
        "memory_add": bodies.add,
        "memory_clear": bodies.clear,
        "memory_forget": bodies.forget,
        "memory_pin": bodies.pin,
        "memory_profile": bodies.profile,
    }
    tools: list[Tool] = []
    for base, fn in functions.items():
        for name in (PREFIX + base, base) if base in _OMNIROUTE else (base,):
            tool = Tool.from_function(
                fn, name=name, description=_DESCRIPTIONS[base], annotations=_ANNOTATIONS[base]
            )
            _tidy_schema(tool.parameters)
            tools.append(tool)
    with _no_global_logging_setup():
        return MCPServer(
            "memoryd",
            version=__version__,
            instructions=(
                "Long-term memory: search before answering, add durable facts the user "
                "states, clear on request."
            ),
            tools=tools,
        )

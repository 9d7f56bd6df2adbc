"""LLM-assisted extraction, opt-in (``extractionMode`` ``llm`` or ``hybrid``).

It runs on the extraction worker, after the chat was answered: one call to an
OpenAI-compatible model gets the user turn plus the owner's few most related memories
and answers a JSON list of operations (ADD, UPDATE id, DELETE id, NONE). The answer is
untrusted input. It is validated strictly and rejected whole on any deviation, and
UPDATE/DELETE may name only ids this call showed the model, all of them the owner's
own current memories, so no answer can touch another owner's memory (the store checks
the owner again when it retires them). Any failure (timeout, upstream error, invalid
answer, the daily or a key's monthly token cap, provider not configured) is an
``LlmExtractionError`` with a ``reason``: ``propose`` counts it and returns None, and
the job keeps the rules result. ``propose`` only proposes: the job
(``engine.extraction_jobs``) writes the items, as it writes the rules', and counts the
answer applied once they are stored. The chat never waits for this module.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memoryd.config.settings import MemorySettings
from memoryd.config.upstreams import Provider, base_url_problem
from memoryd.core.extraction import strip_injected
from memoryd.core.extraction.guard import unsafe
from memoryd.core.llm_ops import (
    MAX_CONTENT_CHARS,
    SYSTEM_PROMPT,
    LlmExtractionError,
    LlmOp,
    Reason,
    answer_text,
    invalid,
    ops_to_reconcile,
    parse_operations,
)
from memoryd.core.scoring import estimate_tokens
from memoryd.engine import llm_budget
from memoryd.engine.llm_stats import LlmStats
from memoryd.models import Memory, Reconcile, to_iso, utcnow
from memoryd.storage.base import Filter

if TYPE_CHECKING:
    from memoryd.engine.extraction_clients import ExtractionClients
    from memoryd.storage.base import Store

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PROVIDER",
    "LlmExtractionError",
    "LlmExtractor",
    "LlmOp",
    "LlmStats",
    "Proposal",
    "Reason",
    "llm_status",
    "ops_to_reconcile",
    "parse_operations",
    "propose",
    "related_memories",
    "resolve_target",
]

#: ``extractionProviderModel`` null: the ``default`` provider (``MEMORYD_UPSTREAM_*``)
#: with a small, cheap model that follows JSON instructions well.
DEFAULT_PROVIDER = "default"
DEFAULT_MODEL = "gpt-4o-mini"
#: Bounds of what is sent (tokens cost money) and read back (a hostile answer).
MAX_USER_CHARS = 16_000
MAX_ASSISTANT_CHARS = 4_000
MAX_ANSWER_BYTES = 1_048_576
MAX_RELATED = 8


# -- the call ----------------------------------------------------------------------------


def _tail(text: str | None, limit: int) -> str:
    return strip_injected(text or "")[-limit:].strip()


class LlmExtractor:
    """One OpenAI-compatible chat call per ``extract``, with a total deadline, a cap on
    the answer's size and the daily token cap checked before calling."""

    def __init__(
        self,
        provider: Provider,
        model: str,
        *,
        timeout_s: float = 15.0,
        daily_token_cap: int = 0,
        stats: LlmStats | None = None,
        token_counter: Callable[[str], int] = estimate_tokens,
        owner: str = "",
        store: Store | None = None,
        key_monthly_cap: int = 0,
    ) -> None:
        self.provider, self.model, self.owner = provider, model, owner
        #: where the key's monthly total is kept (None: no monthly cap is kept)
        self.store, self.key_monthly_cap = store, key_monthly_cap
        self.timeout_s = timeout_s
        self.daily_token_cap = daily_token_cap
        self.stats = stats if stats is not None else LlmStats()
        self.tokens = token_counter

    def request_body(
        self, user_text: str, assistant_text: str | None, related: Sequence[Memory]
    ) -> dict[str, Any]:
        """The chat request. The input travels as one JSON document, so no user text or
        stored memory can pose as a new instruction block."""
        shown = [
            {"id": m.id, "content": m.content[:MAX_CONTENT_CHARS], "slot": m.slot} for m in related
        ]
        payload: dict[str, Any] = {"existing_memories": shown, "user_message": user_text}
        if assistant_text:
            payload["assistant_reply"] = assistant_text
        data = json.dumps(payload, ensure_ascii=False)
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": data},
        ]
        if self.provider.system_role == "user":  # models that reject system messages
            messages = [{"role": "user", "content": f"{SYSTEM_PROMPT}\n\n{data}"}]
        return {
            "model": self.model,
            "messages": messages,
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }

    def extract(
        self, user_text: str, assistant_text: str | None, related: list[Memory]
    ) -> list[LlmOp]:
        """The validated operations; raises ``LlmExtractionError`` on any failure."""
        cap = self.daily_token_cap
        if cap > 0 and self.stats.tokens_today() >= cap:
            raise LlmExtractionError("cap", f"the daily token cap of {cap} is reached")
        monthly = self.key_monthly_cap
        if self.store is not None and llm_budget.over_cap(self.store, self.owner, monthly):
            raise LlmExtractionError(
                "cap", f"key {self.owner}'s monthly token cap of {monthly} is reached"
            )
        user = _tail(user_text, MAX_USER_CHARS)
        assistant = _tail(assistant_text, MAX_ASSISTANT_CHARS) or None
        body = self.request_body(user, assistant, related)
        self.stats.record_request(self.owner)
        raw = self._post(body)
        try:
            envelope = json.loads(raw)
        except (ValueError, RecursionError):
            envelope = None
        prompt_text = "".join(m["content"] for m in body["messages"])
        prompt = _usage(envelope, "prompt_tokens", lambda: self.tokens(prompt_text))
        completion = _usage(
            envelope, "completion_tokens", lambda: self.tokens(raw.decode(errors="replace"))
        )
        self.stats.record_usage(prompt, completion, self.owner)
        if self.store is not None:
            llm_budget.add(self.store, self.owner, prompt + completion)
        return parse_operations(answer_text(envelope), {m.id for m in related})

    def _post(self, body: dict[str, Any]) -> bytes:
        import httpx  # only when the opt-in LLM mode runs

        url = f"{self.provider.base_url}/chat/completions"
        if base_url_problem(self.provider.base_url) is not None:  # user:pass@, from the env
            raise LlmExtractionError("upstream", "the provider's base URL is refused")
        headers = {"content-type": "application/json"}
        if self.provider.api_key:
            headers["authorization"] = f"Bearer {self.provider.api_key}"
        deadline = time.monotonic() + self.timeout_s
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(self.timeout_s)) as client,
                client.stream("POST", url, json=body, headers=headers) as response,
            ):
                if response.status_code != 200:
                    raise LlmExtractionError("upstream", f"HTTP {response.status_code}")
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > MAX_ANSWER_BYTES:
                        raise invalid(f"the answer is larger than {MAX_ANSWER_BYTES} bytes")
                    if time.monotonic() > deadline:
                        raise LlmExtractionError("timeout", f"no answer in {self.timeout_s} s")
                return bytes(data)
        except httpx.TimeoutException:
            raise LlmExtractionError("timeout", f"no answer in {self.timeout_s} s") from None
        except httpx.HTTPError as exc:
            raise LlmExtractionError("upstream", f"{type(exc).__name__}: {exc}") from None


def _usage(envelope: object, name: str, estimate: Callable[[], int]) -> int:
    """The provider's token count, or our estimate when it sent none."""
    usage = envelope.get("usage") if isinstance(envelope, dict) else None
    value = usage.get(name) if isinstance(usage, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**9:
        return value
    return estimate()


def related_memories(
    clients: ExtractionClients, owner: str, text: str, user_id: str = ""
) -> list[Memory]:
    """At most ``MAX_RELATED`` of the owner's current memories for the model to update.

    Retrieval's own ranking first (``clients.preview``: keyword, or hybrid when an
    embedder is on; no access bump), then the owner's newest memories, because a change
    often shares no word with what it replaces ("I moved to Lisbon" vs "User lives in
    Berlin"). Only the owner's rows: the ``global`` pool is never shown."""
    found: dict[str, Memory] = {}
    try:
        preview = clients.preview(
            owner, text[:2000], scope="apiKey", limit=MAX_RELATED, user_id=user_id
        )
        hits = [h.memory for h in preview.hits]
    except Exception as exc:  # retrieval trouble: the newest memories still help
        log.warning("related memories for LLM extraction: %s", exc)
        hits = []
    mine = Filter(owners=(owner,), now=utcnow(), user_id=user_id)
    newest = clients.store.read().recent(mine, MAX_RELATED)
    for memory in [*hits, *newest]:
        # only this end user's own memories may be updated (never the shared ones)
        if memory.api_key_id == owner and memory.user_id == user_id and not memory.superseded_at:
            found.setdefault(memory.id, memory)
    return list(found.values())[:MAX_RELATED]


def resolve_target(
    settings: MemorySettings, providers: dict[str, Provider]
) -> tuple[Provider, str]:
    """The provider and model of ``extractionProviderModel`` (``"name/model"``)."""
    spec = settings.extraction_provider_model
    name, _, model = spec.partition("/") if spec else (DEFAULT_PROVIDER, "/", DEFAULT_MODEL)
    provider = providers.get(name)
    if provider is None or not model:
        raise LlmExtractionError("config", f"provider {name!r} is not configured")
    return provider, model


Texts = list[tuple[str, str]]  # (text, source), as the extraction queue stores them


@dataclass(frozen=True, slots=True)
class Proposal:
    """What the model proposed for one exchange: its validated operations and the
    reconcile items they become. ``asked`` False: no text to ask about, nothing to
    count."""

    ops: list[LlmOp]
    items: list[Reconcile]
    asked: bool = True


def propose(
    clients: ExtractionClients,
    owner: str,
    session_id: str,
    texts: Texts,
    settings: MemorySettings,
    user_id: str = "",
) -> Proposal | None:
    """Ask the model for the exchange's operations, as reconcile items the job writes.
    None when it fell back (counted in ``clients.llm_stats``; the job keeps the rules
    result); never raises. What the model proposes passes the same guard as what the
    person said."""
    stats = clients.llm_stats
    user = "\n".join(t for t, source in texts if source == "user").strip()
    assistant = "\n".join(t for t, source in texts if source == "assistant").strip()
    if not user and not assistant:
        return Proposal([], [], asked=False)
    try:
        provider, model = resolve_target(settings, clients.providers())
        extractor = LlmExtractor(
            provider,
            model,
            timeout_s=settings.extraction_timeout_ms / 1000,
            daily_token_cap=settings.extraction_daily_token_cap,
            stats=stats,
            token_counter=clients.tokens,
            owner=owner,
            store=clients.store,
            key_monthly_cap=settings.extraction_key_monthly_token_cap,
        )
        related = related_memories(clients, owner, user or assistant, user_id)
        ops = extractor.extract(user, assistant or None, related)
        ops = [op for op in ops if not (op.content and unsafe(op.content))]
        items = ops_to_reconcile(owner, session_id, ops, to_iso(utcnow()), user_id)
    except LlmExtractionError as exc:
        log.warning("LLM extraction fell back to rules (%s): %s", exc.reason, exc)
        stats.record_fallback(exc.reason, str(exc))
        return None
    except Exception as exc:  # the answer could not be turned into writes: a fallback too
        not_applied(stats, exc)
        return None
    return Proposal(ops, items)


def not_applied(stats: LlmStats, exc: Exception) -> None:
    """An answer that could not be applied (turned into writes, or written): logged and
    counted as an ``invalid`` fallback; the job keeps the rules result."""
    log.error("LLM extraction could not be applied", exc_info=exc)
    stats.record_fallback("invalid", f"not applied: {type(exc).__name__}: {exc}")


def llm_status(clients: ExtractionClients) -> dict[str, Any]:
    """The ``extraction.llm`` part of engine status: mode, target, counters."""
    settings = clients.settings.get()
    try:
        provider, model = resolve_target(settings, clients.providers())
        target: str | None = f"{provider.name}/{model}"
        reason = f"LLM extraction via {target}"
    except LlmExtractionError as exc:
        target, reason = None, str(exc)
    if settings.extraction_mode == "rules":
        reason = "rules only (extractionMode is rules)"
    return {
        "mode": settings.extraction_mode,
        "providerModel": target,
        "available": settings.extraction_mode != "rules" and target is not None,
        "reason": reason,
        "timeoutMs": settings.extraction_timeout_ms,
        "dailyTokenCap": settings.extraction_daily_token_cap,
        "keyMonthlyTokenCap": settings.extraction_key_monthly_token_cap,
        **clients.llm_stats.snapshot(),
    }

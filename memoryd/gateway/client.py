"""The gateway's HTTP client to upstream providers, on aiohttp.

Why not httpx, which the rest of memoryd uses: measured on this kind of machine with 16
concurrent calls to a local upstream, httpx's async client spent ~2.0 ms of CPU per
request (its pool polls every idle connection's socket on each request, through
anyio), aiohttp ~0.19 ms; that was the largest share of a proxied request's cost.
The embedding, rerank and extraction clients stay on httpx: they run in
worker threads, far from the request path.

What the gateway relies on, kept from the httpx version:
- a pool of ``max_connections`` shared by every key; a request that finds it full waits
  at most ``pool_wait_s`` and then fails as ``upstream_pool_exhausted`` (503), never as
  the provider's timeout (our own semaphore, so the two cannot be confused);
- ``read_timeout_s`` between bytes (a stalled provider is a 504 ``upstream_timeout``),
  ``connect_timeout_s`` to connect;
- bytes relayed exactly as received: no decompression (``identity`` is asked for);
- a keep-alive shorter than common servers' idle timeouts, so a connection the
  provider is about to close is not reused for a POST that cannot be retried.
"""

from __future__ import annotations

import asyncio
import io
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from yarl import URL

#: Bodies larger than this are sent from a stream (aiohttp's own threshold).
LARGE_BODY = 2**20
#: Seconds an idle upstream connection is kept (uvicorn closes at 5 s, nginx at 75 s).
KEEPALIVE_S = 4.0


class UpstreamError(Exception):
    """The provider could not be reached or answered too slowly: ``status``, ``code``,
    and the end of a sentence about it (``"timed out"``)."""

    def __init__(self, status: int, code: str, tail: str, cause: str = "") -> None:
        super().__init__(tail)
        self.status, self.code, self.tail = status, code, tail
        self.cause = cause or code  # the underlying failure's name, for logs


def _failure(exc: BaseException) -> UpstreamError:
    name = type(exc).__name__
    if isinstance(exc, TimeoutError | aiohttp.ServerTimeoutError):
        return UpstreamError(504, "upstream_timeout", "timed out", name)
    return UpstreamError(502, "upstream_unreachable", f"is unreachable: {name}", name)


def _salvage(content: aiohttp.StreamReader) -> bytes:
    """What arrived before a break: aiohttp raises the break before handing out bytes
    it already holds, and the client should get every whole event that came. Private
    API, so anything unexpected gives up on the rest rather than failing."""
    buffered = getattr(content, "_buffer", None)
    take = getattr(content, "_read_nowait", None)
    if not buffered or not callable(take):
        return b""
    try:
        data = take(-1)
    except Exception:
        return b""
    return data if isinstance(data, bytes) else b""


class UpstreamResponse:
    """One upstream response; its pool slot is held until it is read or closed."""

    def __init__(self, response: aiohttp.ClientResponse, slot: asyncio.Semaphore) -> None:
        self._response, self._slot, self._open = response, slot, True
        self.status_code = response.status
        self.headers: Mapping[str, str] = response.headers
        self.content: bytes | None = None  # the whole body, once ``read``

    async def read(self) -> bytes:
        try:
            self.content = await self._response.read()
            return self.content
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _failure(exc) from None
        finally:
            self.close()

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive; ``UpstreamError`` when it breaks off (a
        reset, a truncated chunk, a read timeout)."""
        content = self._response.content
        try:
            async for chunk in content.iter_any():
                yield chunk
        except (TimeoutError, aiohttp.ClientError) as exc:
            rest = _salvage(content)
            if rest:
                yield rest
            raise _failure(exc) from None

    def close(self) -> None:
        """Give the connection and the pool slot back (idempotent; safe from callbacks)."""
        if self._open:
            self._open = False
            self._response.close()  # a half-read body cannot go back into the pool
            self._slot.release()

    async def aclose(self) -> None:
        self.close()


class UpstreamClient:
    def __init__(
        self,
        *,
        max_connections: int,
        read_timeout_s: float | None,
        connect_timeout_s: float = 10.0,
        pool_wait_s: float = 5.0,
    ) -> None:
        self.max_connections, self.pool_wait_s = max(1, max_connections), pool_wait_s
        # ``connect`` bounds name resolution too (``sock_connect`` does not); aiohttp's
        # own pool never makes a request wait, our semaphore does that first
        self._timeout = aiohttp.ClientTimeout(
            total=None,
            connect=connect_timeout_s,
            sock_connect=connect_timeout_s,
            sock_read=read_timeout_s,
        )
        self._session: aiohttp.ClientSession | None = None
        self._slots = asyncio.Semaphore(self.max_connections)

    async def __aenter__(self) -> UpstreamClient:
        connector = aiohttp.TCPConnector(
            limit=self.max_connections, keepalive_timeout=KEEPALIVE_S, enable_cleanup_closed=True
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            auto_decompress=False,
            # HTTP(S)_PROXY as httpx honoured it; aiohttp then reads the environment and
            # ~/.netrc on every request (6% of a proxied chat's CPU), so only when a
            # proxy is configured at all
            trust_env=bool(urllib.request.getproxies()),
            skip_auto_headers=("Accept-Encoding", "User-Agent"),
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            raise RuntimeError("the upstream client is not started")
        return self._session

    async def send(
        self,
        method: str,
        url: str,
        *,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        query: str = "",
        params: Mapping[str, Any] | None = None,
    ) -> UpstreamResponse:
        """Send and return once the response's head has arrived (the body is read
        through the result, which must be read or closed)."""
        try:
            target = URL(f"{url}?{query}" if query else url, encoded=bool(query))
        except ValueError as exc:  # a provider URL that cannot be one (port 99999)
            raise UpstreamError(502, "upstream_unreachable", f"has an invalid URL: {exc}") from None
        if target.user is not None or target.password is not None:  # from the env, or older
            raise UpstreamError(  # aiohttp would refuse it beside our Authorization header
                502,
                "upstream_unreachable",
                "has credentials in its base URL (user:password@); memoryd sends the "
                "provider's API key: remove them from the URL",
            )
        try:
            # ``asyncio.timeout``, not ``wait_for``: on 3.11 a cancel racing the acquire
            # could take a slot and never give it back
            async with asyncio.timeout(self.pool_wait_s):
                await self._slots.acquire()
        except TimeoutError:
            raise UpstreamError(
                503, "upstream_pool_exhausted", "every upstream connection is busy; retry shortly"
            ) from None
        out = {**(headers or {}), "accept-encoding": "identity"}
        # aiohttp warns on a bytes body over 1 MiB (written in one go); a stream it
        # writes in pieces is what it asks for
        data: bytes | io.BytesIO | None = content
        if content is not None and len(content) > LARGE_BODY:
            data = io.BytesIO(content)
        try:
            response = await self.session.request(
                method, target, data=data, headers=out, params=params, allow_redirects=False
            )
        except BaseException as exc:
            self._slots.release()
            if isinstance(exc, aiohttp.ClientError | TimeoutError):
                raise _failure(exc) from None
            raise
        return UpstreamResponse(response, self._slots)

    @property
    def free_slots(self) -> int:
        """Pool slots not held by any call (tests check nothing leaks)."""
        return self._slots._value  # asyncio.Semaphore keeps no public count


__all__ = ["UpstreamClient", "UpstreamError", "UpstreamResponse"]

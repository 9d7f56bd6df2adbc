"""The two helper processes of the abuse run (``bench/abuse.py``), each its own process.

``python -m bench.abusers upstream --port N`` is the fake provider: the polite model
answers a short non-streamed reply at once (a responder), every other model streams
``--words`` words one per ``--chunk-delay`` seconds, so a held stream outlives the run.

``python -m bench.abusers attack --base URL`` is the greedy tenant, with its secret in
``ABUSE_SECRET``: ``--streams`` streaming chats kept open (a refused one is retried
after its ``retry-after``, as the official clients do; an ended one is re-opened) and
``--slow`` sockets that send half a request head, then one header byte a second, and
re-connect when the server closes them. It prints ``ready`` once every stream had its
first answer and every socket is open, runs until SIGTERM, then prints its counts as
one JSON line. It runs apart from the polite clients so that its own event loop, busy
with hundreds of sockets, does not delay theirs and inflate their latency.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sys
import time
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

import httpx

POLITE_MODEL = "polite"
GREEDY_MODEL = "greedy"
#: The head a slow socket starts with: a request line and one header, no blank line.
SLOW_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def upstream_main(port: int, words: int, chunk_delay: float) -> None:
    """Serve the fake provider until killed."""
    import uvicorn

    from memoryd.testing import FakeUpstream

    fake = FakeUpstream()
    fake.reply = " ".join(f"w{i}" for i in range(words))
    fake.chunk_delay_s = chunk_delay

    def polite(body: dict[str, Any]) -> tuple[int, Any]:
        fake.requests.clear()  # it records every request; a long run need not keep them
        message = {"role": "assistant", "content": "Sure, noted."}
        return 200, {
            "id": "chatcmpl-polite",
            "object": "chat.completion",
            "created": 1,
            "model": POLITE_MODEL,
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    fake.responders[POLITE_MODEL] = polite

    uvicorn.run(fake.app, host="127.0.0.1", port=port, log_level="warning")


class Attack:
    """What the greedy tenant saw, counted as it happens."""

    def __init__(self, slow_target: int) -> None:
        self.stop = asyncio.Event()
        self.slow_target = slow_target
        self.counts: Counter[str] = Counter()
        self.first_answers = 0
        self.open_streams = 0
        self.peak_open_streams = 0
        self.slow_open = 0
        self.slow_lifetimes: list[float] = []

    def result(self) -> dict[str, Any]:
        life = sorted(self.slow_lifetimes)
        return {
            **dict(sorted(self.counts.items())),
            "peak_open_streams": self.peak_open_streams,
            "slow_lifetime_s_p50": round(life[len(life) // 2], 2) if life else None,
            "slow_lifetime_s_max": round(life[-1], 2) if life else None,
        }


async def greedy_stream(
    http: httpx.AsyncClient, secret: str, attack: Attack, jitter: float
) -> None:
    """One of the greedy tenant's streams, re-opened for as long as the attack lasts.
    A refused one waits ``retry-after`` as the official clients do (no jitter: all the
    refused retry in step), or up to ``jitter`` times it more, spread at random."""
    rng = random.Random()
    body = {
        "model": GREEDY_MODEL,
        "stream": True,
        "messages": [{"role": "user", "content": "write me a very long story"}],
    }
    headers = {"Authorization": f"Bearer {secret}"}
    first = True
    while not attack.stop.is_set():
        wait = 0.0
        try:
            async with http.stream(
                "POST", "/v1/chat/completions", json=body, headers=headers
            ) as response:
                if first:
                    attack.first_answers += 1
                    first = False
                if response.status_code == 200:
                    attack.counts["streams_accepted"] += 1
                    attack.open_streams += 1
                    attack.peak_open_streams = max(attack.peak_open_streams, attack.open_streams)
                    try:
                        async for _ in response.aiter_raw():  # one word every chunk delay
                            attack.counts["stream_chunks"] += 1
                    finally:
                        attack.open_streams -= 1
                    attack.counts["streams_ended"] += 1
                else:
                    await response.aread()
                    refused = response.status_code == 429
                    attack.counts[
                        "streams_refused_429" if refused else f"http_{response.status_code}"
                    ] += 1
                    wait = float(response.headers.get("retry-after") or 1)
                    wait *= 1 + jitter * rng.random()
        except httpx.HTTPError as exc:
            attack.counts[f"error_{type(exc).__name__}"] += 1
            wait = 0.5
        if wait:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(attack.stop.wait(), wait)


async def slow_socket(host: str, port: int, attack: Attack, ready: asyncio.Event) -> None:
    """A slow-header client: half a request head, one more byte a second, never done."""
    while not attack.stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            attack.counts["slow_connect_failed"] += 1
            await asyncio.sleep(0.5)
            continue
        opened = time.monotonic()
        attack.counts["slow_opened"] += 1
        attack.slow_open += 1
        if attack.slow_open >= attack.slow_target:
            ready.set()
        try:
            writer.write(SLOW_HEAD)
            while not attack.stop.is_set():
                try:
                    data = await asyncio.wait_for(reader.read(4096), 1.0)
                except TimeoutError:
                    writer.write(b"a")  # still "sending": an idle timer alone would not fire
                    await writer.drain()
                    continue
                status = data[9:12].decode(errors="replace") if data else "eof"
                attack.counts[f"slow_closed_{status}"] += 1
                attack.slow_lifetimes.append(time.monotonic() - opened)
                break
        except OSError:
            attack.counts["slow_closed_reset"] += 1
            attack.slow_lifetimes.append(time.monotonic() - opened)
        finally:
            attack.slow_open -= 1
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def attack_main(
    base: str, secret: str, streams: int, slow: int, jitter: float = 0.0
) -> dict[str, Any]:
    """Run the attack until SIGTERM; return its counts."""
    attack = Attack(slow)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, attack.stop.set)
    url = urlsplit(base)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    limits = httpx.Limits(max_connections=streams + 8, max_keepalive_connections=streams + 8)
    timeout = httpx.Timeout(60.0, connect=10.0)
    slow_ready = asyncio.Event()
    if not slow:
        slow_ready.set()
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=timeout) as http:
        tasks = [
            asyncio.create_task(greedy_stream(http, secret, attack, jitter)) for _ in range(streams)
        ]
        tasks += [
            asyncio.create_task(slow_socket(host, port, attack, slow_ready)) for _ in range(slow)
        ]
        deadline = time.monotonic() + 60
        while attack.first_answers < streams and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(slow_ready.wait(), max(0.1, deadline - time.monotonic()))
        print("ready", flush=True)
        await attack.stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return attack.result()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.abusers", description=__doc__)
    sub = parser.add_subparsers(dest="role", required=True)
    up = sub.add_parser("upstream")
    up.add_argument("--port", type=int, required=True)
    up.add_argument("--words", type=int, default=2000)
    up.add_argument("--chunk-delay", type=float, default=0.5)
    at = sub.add_parser("attack")
    at.add_argument("--base", required=True)
    at.add_argument("--streams", type=int, default=250)
    at.add_argument("--slow", type=int, default=200)
    at.add_argument("--retry-jitter", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.role == "upstream":
        upstream_main(args.port, args.words, args.chunk_delay)
        return 0
    result = asyncio.run(
        attack_main(
            args.base, os.environ["ABUSE_SECRET"], args.streams, args.slow, args.retry_jitter
        )
    )
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

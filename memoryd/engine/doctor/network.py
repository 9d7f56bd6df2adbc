"""Calls that may hang, bounded: doctor must answer in seconds when things are down.

Socket timeouts do not cover a name lookup, so every outside call runs in a daemon
thread the caller stops waiting for after the deadline (a lookup still hanging then
does not keep the process alive). "Reachable" means any HTTP answer, a 401 or 404
included: doctor sends no credentials upstream, it only asks whether something
answers at that address.
"""

from __future__ import annotations

import http.client
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

T = TypeVar("T")


def bounded(fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()``'s result or exception; ``TimeoutError`` when it takes longer than ``timeout_s``."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="memoryd-doctor", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not outcome:
        raise TimeoutError(f"no answer within {timeout_s:g} s")
    done, value = outcome[0]
    if not done:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]  # fn's own T, stored untyped


def parallel(fns: Sequence[Callable[[], T]]) -> list[T]:
    """Every ``fn()``, run at once, in order. Each must bound itself and not raise."""
    results: list[T | None] = [None] * len(fns)

    def run(index: int) -> None:
        results[index] = fns[index]()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(fns))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [result for result in results if result is not None]


def http_probe(
    url: str, timeout_s: float, headers: Mapping[str, str] | None = None
) -> tuple[int | None, str]:
    """``(status, "")`` when an HTTP answer came back, ``(None, why not)`` otherwise."""

    def attempt() -> int:
        request = urllib.request.Request(url, headers={"user-agent": "memoryd-doctor"})
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            exc.close()
            return exc.code

    try:
        return bounded(attempt, timeout_s + 0.5), ""
    except TimeoutError:
        return None, f"no answer within {timeout_s:g} s"
    except urllib.error.URLError as exc:
        return None, str(exc.reason)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return None, str(exc) or type(exc).__name__

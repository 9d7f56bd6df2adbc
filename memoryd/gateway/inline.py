"""Whether a request's memory work runs on the event loop or in a worker thread.

Retrieval is database and model work, so the gateway hands it to a worker thread. For
most keys that hop costs more than the work: a keyword search over a resident copy
takes about a millisecond, while waking a worker, passing the GIL to it and back and
waking the loop again cost a third of a request's CPU at 16 concurrent clients
(docs/benchmarks/gateway.md, "Memory work on the event loop"). So each key's memory work is
timed, and a key whose recent calls averaged under ``budget_ms`` runs inline; a slower
one (a query to embed, a large owner) keeps its thread, so the loop is never held much
longer than that. Only work that stays in the process may run inline at all
(``engine.locality``): a network round trip would hold every other request.

The average is exponentially weighted over the CPU time each call took on the thread
it ran on, wherever it ran: wall time would count, under load, the waits for the GIL
that other threads hold (the work is the same), and would send every key to a thread
and keep it there. Work that waits instead of computing is kept off the loop by the
rule above; what it cannot see (a read from a cold disk, a search that first embeds
the owner's newest memories and waits for their write) shows as an inline call whose
wall time passed ``STALL_FACTOR`` times the budget (and 10 ms): that call counts at its
wall time. A slow call sends the key back to a thread until the average comes down
again; a key starts on a thread until ``SAMPLES`` calls were timed. ``budget_ms`` 0
keeps every call on a thread.
"""

from __future__ import annotations

from collections import OrderedDict

#: Calls timed before a key may run inline.
SAMPLES = 3
#: Weight of the newest call in the mean.
ALPHA = 0.2
#: Keys remembered (least recently seen out first).
MAX_KEYS = 10_000
#: An inline call whose wall time passed this many budgets (and ``MIN_STALL_S``) held
#: the loop waiting, not computing: it counts at its wall time.
STALL_FACTOR = 5
MIN_STALL_S = 0.010


class InlineGate:
    """Per-key running cost of the memory work; used on the event loop only."""

    def __init__(self, budget_ms: float) -> None:
        self.budget_s = max(0.0, budget_ms) / 1000
        self.stall_s = max(MIN_STALL_S, STALL_FACTOR * self.budget_s)
        self._keys: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self.inline_calls = 0
        self.thread_calls = 0

    def cheap(self, key: str) -> bool:
        """Whether ``key``'s recent memory work fits the budget."""
        found = self._keys.get(key) if self.budget_s > 0 else None
        return found is not None and found[1] >= SAMPLES and found[0] <= self.budget_s

    def record(self, key: str, seconds: float, *, inline: bool, wall: float = 0.0) -> None:
        """``seconds``: the call's CPU time; ``wall``: its wall time (an inline call
        that stalled the loop counts at that)."""
        if inline:
            self.inline_calls += 1
            if wall > self.stall_s:
                seconds = max(seconds, wall)
        else:
            self.thread_calls += 1
        if self.budget_s <= 0:
            return
        found = self._keys.pop(key, None)
        if found is None:
            mean, n = seconds, 1
        else:
            mean, n = found[0] + ALPHA * (seconds - found[0]), found[1] + 1
        self._keys[key] = (mean, min(n, SAMPLES))
        if len(self._keys) > MAX_KEYS:
            self._keys.popitem(last=False)

    def stats(self) -> dict[str, float | int]:
        return {
            "budgetMs": round(self.budget_s * 1000, 3),
            "inline": self.inline_calls,
            "thread": self.thread_calls,
            "keys": len(self._keys),
        }

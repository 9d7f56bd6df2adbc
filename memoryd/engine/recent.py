"""Why a request was told what it was told: the memories each recent gateway
request carried, by its request id (``x-request-id``), for a bounded window.

Kept in this process's memory, newest ``capacity`` requests that carried anything: a
record holds ids and scores, never content (a memory's text is read from the store
when it is asked for, so an erased memory shows as gone). Behind a load balancer each
server answers for the requests it served.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from memoryd.models import Hit, to_iso, utcnow

#: Requests kept (1-10 KB each: ids and scores of up to ~30 memories).
CAPACITY = 2000


class RecentRequests:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._records: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def record(
        self,
        request_id: str | None,
        owner: str,
        user_id: str,
        profile: Sequence[Hit],
        hits: Sequence[Hit],
    ) -> None:
        if not request_id or not (profile or hits):
            return
        entry = {
            "requestId": request_id,
            "at": to_iso(utcnow()),
            "apiKeyId": owner,
            "userId": user_id or None,
            "memories": [_why(h, "profile") for h in profile] + [_why(h, "memories") for h in hits],
        }
        with self._lock:
            held = self._records.get(request_id)
            if held is not None and held["apiKeyId"] != owner:
                return  # a client-chosen x-request-id never replaces another key's record
            self._records[request_id] = entry
            self._records.move_to_end(request_id)
            while len(self._records) > self.capacity:
                self._records.popitem(last=False)

    def carrying(self, memory_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The recent requests that carried ``memory_id``, newest first: their id, time,
        key and end user, and how the memory was found."""
        out: list[dict[str, Any]] = []
        with self._lock:
            for entry in reversed(self._records.values()):
                why = next((m for m in entry["memories"] if m["id"] == memory_id), None)
                if why is not None:
                    head = {k: entry[k] for k in ("requestId", "at", "apiKeyId", "userId")}
                    out.append(head | {"carried": why})
                    if len(out) >= limit:
                        break
        return out

    def get(self, request_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._records.get(request_id)
            return (
                None
                if found is None
                else {**found, "memories": [dict(m) for m in found["memories"]]}
            )


def _why(hit: Hit, section: str) -> dict[str, Any]:
    """One carried memory: where in the block, and how it was found."""
    why = {
        "id": hit.memory.id,
        "section": section,
        "tier": hit.tier,
        "score": round(hit.score, 4),
        "vecScore": None if hit.vec_score is None else round(hit.vec_score, 4),
        "ftsScore": None if hit.fts_score is None else round(hit.fts_score, 4),
        "reason": hit.reason,
    }
    attribute = hit.memory.attribute
    if section == "profile":
        if hit.memory.metadata.get("pinned") is True:
            why["reason"] = "pinned"
        elif hit.memory.metadata.get("careful") is True and "pinned" not in hit.memory.metadata:
            why["reason"] = "in every request: a constraint advice must weigh"
        elif hit.tier == "topic":
            why["reason"] = f"the question's topic bears on it: {attribute}"
        else:
            why["reason"] = f"in every request: {attribute or 'the profile'}"
    return why

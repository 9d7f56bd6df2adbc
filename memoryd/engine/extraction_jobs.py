"""Extraction jobs: durable from the gateway's answer until their facts are stored.

A job is committed to ``extraction_queue`` by the writer thread (the caller is not
blocked) and handed to the background worker once committed; the future ``submit``
returns resolves at that commit, so the gateway, which waits for it before the last
byte of its answer, knows a crash can no longer lose the exchange. The row is deleted
once the job ran. Each job carries a lease (``claimed_by`` this process until
``lease_s`` from now): ``recover`` claims and runs every job nobody holds, that is,
whatever a killed process left, here or, on a shared store, on another server, and
``sweep`` repeats that while the server runs. Facts upsert on owner + key, so a job
run twice (a lease that ran out mid-job) stores nothing twice.

A job runs the guard (what it refuses is held for review or dropped, ``_hold``), then
extraction by ``extractionMode``: the rules (``rule_items``), the model
(``llm_extraction.propose``) or both each only find reconcile items, and ``_write``
alone stores them (the key's quota, one reconcile transaction, the counters). What the
job needs is given at construction (``ExtractionClients``); it never sees the engine.

Memory holds at most ``max_pending`` jobs: under a load the worker cannot keep up with,
a new job is committed without a lease and left in the table (``deferred``), and the
worker claims such jobs in batches as its queue empties, so a backlog grows the table,
never the process (in a 12-minute closed-loop load the in-memory queue had grown by
~30 jobs a second, the server's RSS with it).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Collection, Mapping
from concurrent.futures import Future
from datetime import datetime, timedelta

from memoryd.config.settings import MemorySettings
from memoryd.core.extraction import ENDED, Fact, extract, fact_metadata
from memoryd.core.extraction.attributes import ATTRIBUTES
from memoryd.core.extraction.compound import parts
from memoryd.core.extraction.guard import unsafe
from memoryd.core.extraction.standing import MAY_ASK
from memoryd.engine.attribute_backing import (
    SWITCHED,
    back,
    notable,
    settle,
    updated_requests,
)
from memoryd.engine.attribute_model import AttributeModel
from memoryd.engine.background import BackgroundWorker
from memoryd.engine.extraction_clients import ExtractionClients
from memoryd.engine.llm_extraction import Proposal, not_applied, propose
from memoryd.engine.quotas import within
from memoryd.engine.steering import ATTACK_AT, Steer, preferences, standing, steered
from memoryd.models import (
    Held,
    MemoryType,
    NewMemory,
    Origin,
    Reconcile,
    Reconciled,
    to_iso,
    utcnow,
)
from memoryd.priority import lower_this_thread
from memoryd.storage.base import Filter, NewHeld, NewJob, Writer

log = logging.getLogger(__name__)

#: How long the server that queued a job holds it before another may run it.
DEFAULT_LEASE_S = 60.0
#: The single-valued attributes a new statement may update (``_held``), and the rows
#: read to find which of them a person holds.
SINGLE_ATTRIBUTES = tuple(a.name for a in ATTRIBUTES if a.single) + tuple(sorted(SWITCHED))
HELD_ROWS = 64
#: Jobs held in memory (their texts with them) before new ones wait in the table.
DEFAULT_MAX_PENDING = 256

Texts = list[tuple[str, str]]  # (text, source) with source "user" or "assistant"


class ExtractionJobs:
    """The durable queue of extraction jobs and the one path that runs them."""

    def __init__(
        self,
        clients: ExtractionClients,
        background: BackgroundWorker,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.clients = clients
        self.store = clients.store
        self.stats = clients.stats
        self.background = background
        self.running: int | None = None  # the job the worker runs now
        #: the classifier backing the rules; the extraction benchmark and tests turn it
        #: off (None) to measure the rules alone
        self.attributes: AttributeModel | None = clients.attributes
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease_s = lease_s
        self.max_pending = max(1, max_pending)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._refill_queued = False

    def quarantines(self) -> bool:
        """``quarantineGuarded``: hold what the guard refuses for review, not drop it."""
        return self.clients.settings.get().quarantine_guarded

    def submit(
        self,
        owner: str,
        session_id: str,
        user_text: str | None,
        assistant_text: str | None,
        sources: Collection[str],
        user_id: str = "",
        origin: Origin | None = None,
    ) -> Future[None] | None:
        """Queue one exchange; the future resolves once the job is committed. None when
        there is nothing to extract. Never raises. An erasure of the subject after
        ``origin.said_at`` (default now) drops it; its facts carry the origin."""
        texts = [
            # a lone surrogate ("\\ud800" is valid JSON) cannot be stored as UTF-8
            (t.encode("utf-8", "replace").decode("utf-8"), s)
            for t, s in ((user_text, "user"), (assistant_text, "assistant"))
            if s in sources and isinstance(t, str) and t.strip()
        ]
        if not texts:
            return None
        durable: Future[None] = Future()
        # A worker that is behind leaves the job to the table rather than to memory.
        deferred = self.background.pending >= self.max_pending
        try:
            self.stats["scheduled"] += 1
            now = utcnow()
            said = origin or Origin(now)
            job = NewJob(
                owner,
                session_id,
                texts,
                now,
                user_id,
                None if deferred else self.worker,
                None if deferred else now + self._lease(),
                said.said_at,
                said.request_id,
            )
            queued = self.store.submit(lambda tx: tx.queue_extraction(job))
        except Exception:
            log.exception("could not schedule extraction")
            self.stats["failed"] += 1
            return None

        def committed(done: Future[int]) -> None:
            job_id = None if done.exception() else done.result()
            if deferred and job_id is not None:
                self.stats["deferred"] += 1
                self._schedule_refill()  # after the commit, so the claim can see the row
            else:
                self.background.submit(self.run, job_id, owner, session_id, texts, user_id, said)
            if not durable.cancelled():  # a waiter that gave up may have cancelled it
                durable.set_result(None)

        queued.add_done_callback(committed)
        return durable

    def _schedule_refill(self) -> None:
        """One claim of deferred jobs queued behind the worker's current jobs (a second
        only once the first has started, so a job committed meanwhile is not missed)."""
        with self._lock:
            if self._refill_queued:
                return
            self._refill_queued = True
        if not self.background.submit(self._refill):
            with self._lock:
                self._refill_queued = False

    def _refill(self) -> None:
        """Claim up to half the memory budget of unleased jobs and queue them; another
        claim follows them when this one was full."""
        with self._lock:
            self._refill_queued = False
        batch = max(1, self.max_pending // 2)
        if self._claim(self._expired_before(), batch) == batch:
            self._schedule_refill()

    def worth(self, user_text: str, settings: MemorySettings) -> bool:
        """Whether a turn whose user text is ``user_text`` can store anything (the
        assistant's text, when extracted too, is not known yet: then always)."""
        if "assistant" in settings.extract_from:
            return True
        rules_only = settings.extraction_mode == "rules"
        texts = [(user_text, "user")]
        return "user" in settings.extract_from and self.needs_job(texts, rules_only=rules_only)

    def needs_job(self, texts: Texts, *, rules_only: bool) -> bool:
        """Whether an exchange of ``texts`` could store anything: always with an LLM
        in the loop; with the rules, when they find a fact or, with the attribute
        classifier at hand, a first-person statement it may keep. Most turns state
        none, and queueing them cost two writer transactions and a job for nothing."""
        if not rules_only:
            return True
        classifier = self.attributes is not None and self.attributes.available()
        for text, source in texts:
            if unsafe(text):
                if self.quarantines():
                    return True  # the job holds it for review
                self.stats["guarded"] = self.stats.get("guarded", 0) + 1  # no job sees it
                continue
            weak: list[str] = []
            facts, leftovers = extract(text, source=source, guard=False, weak=weak)
            if facts or ((leftovers or weak) and classifier):  # guarded above
                return True
            if classifier and source == "user" and MAY_ASK.search(text):
                return True  # a standing request the steering reader may read
            if source == "user" and self._careful() and notable(text):
                return True  # a constraint the careful reader may keep whole
        return False

    def _careful(self) -> bool:
        return self.attributes is not None and self.attributes.careful_available()

    def _lease(self) -> timedelta:
        return timedelta(seconds=self.lease_s)

    def recover(self, limit: int = 500) -> int:
        """Claim and run the jobs nobody holds: committed by a process that was killed
        before it ran them (this one's predecessor, or another server on a shared
        store); returns how many."""
        claimed = self._claim(self._expired_before(), limit)
        if claimed:
            log.warning("recovered %d extraction jobs a stopped process left", claimed)
        if claimed == limit:  # more wait: claimed as the worker's queue drains (a stop
            self._schedule_refill()  # within MEMORYD_SHUTDOWN_S can leave thousands)
        return claimed

    def _expired_before(self) -> datetime:
        """Leases that ended before this are a dead process's: on an unshared store every
        lease is (no other server lives on it)."""
        now = utcnow()
        return now if self.store.capabilities.shared else now + timedelta(days=36500)

    def _claim(self, expired_before: datetime, limit: int) -> int:
        """Lease up to ``limit`` jobs nobody holds (leases ending before
        ``expired_before``) and queue them on the worker; returns how many."""
        now = utcnow()
        jobs = self.store.write(
            lambda tx: tx.claim_extractions(self.worker, expired_before, now + self._lease(), limit)
        )
        for job in jobs:  # said when its request came in (a job queued before 0018: now)
            said = Origin(job.said_at or now, job.request_id)
            self.background.submit(
                self.run, job.id, job.owner, job.session_id, job.texts, job.user_id, said
            )
        return len(jobs)

    def sweep(self, every_s: float | None = None) -> threading.Thread:
        """Recover in the background every ``every_s`` (half a lease) until ``close``:
        on a shared store, the jobs of a server that died mid-way."""
        interval = every_s if every_s is not None else self.lease_s / 2

        def loop() -> None:
            lower_this_thread()
            while not self._stop.wait(interval):
                try:
                    self.recover()
                except Exception:  # a store that is down: the next round tries again
                    log.warning("extraction recovery sweep failed", exc_info=True)

        thread = threading.Thread(target=loop, name="memoryd-extraction-sweep", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self._stop.set()

    def stop(self, timeout: float) -> tuple[int, int]:
        """A server stopping: the job running gets up to ``timeout``; the queued ones
        stay in their table, given back for the next start (or another server) to run
        at once. ``(dropped from memory, released in the table)``."""
        self.close()
        dropped = self.background.stop(timeout)
        self.store.flush()  # a job committing now finds the worker closed: it stays queued
        still = self.running  # past ``timeout``: its lease runs out; another runs it once
        try:
            released = self.store.write(
                lambda tx: tx.release_extractions(self.worker, keep=(still,) if still else ())
            )
        except Exception:  # a store that is down: the leases run out by themselves
            log.warning("could not give back the queued extraction jobs", exc_info=True)
            released = 0
        log.info("stopping: %d extraction jobs left queued (%d released)", dropped, released)
        return dropped, released

    def run(
        self,
        job_id: int | None,
        owner: str,
        session_id: str,
        texts: Texts,
        user_id: str = "",
        origin: Origin | None = None,
    ) -> None:
        """One job, held since ``origin.said_at``: an erasure of its subject after that
        drops it."""
        self.running = job_id
        try:
            if texts:
                self.extract_and_store(owner, session_id, texts, user_id, origin)
        finally:  # a failure is logged and counted; extraction is pure, a retry cannot help
            if job_id is not None:
                self.store.write(lambda tx: tx.unqueue_extraction(job_id))
            self.running = None

    def extract_and_store(
        self,
        owner: str,
        session_id: str,
        texts: Texts,
        user_id: str = "",
        origin: Origin | None = None,
        *,
        guard: bool = True,
    ) -> list[Reconciled]:
        """``_extract_and_store``, unless the subject was erased after ``origin`` (the
        job was queued, or the conversation held, before the erasure); an
        erasure that commits while it runs takes back what it stored."""
        since = origin.said_at if origin is not None else None
        if since is not None and self.store.read().erased_since(owner, user_id, since):
            return []
        stored = self._extract_and_store(owner, session_id, texts, user_id, origin, guard=guard)
        if since is not None and stored and self.store.read().erased_since(owner, user_id, since):
            ids = [r.memory.id for r in stored if r.memory is not None]
            self.store.write(lambda tx: [tx.delete(i) for i in ids])
            return []
        return stored

    def _extract_and_store(
        self,
        owner: str,
        session_id: str,
        texts: Texts,
        user_id: str,
        origin: Origin | None,
        *,
        guard: bool = True,
    ) -> list[Reconciled]:
        """By ``extractionMode``: ``rules`` writes the rules' facts; ``llm`` the model's,
        and the rules' only when it fell back; ``hybrid`` the rules' first, so the model
        sees them and can refine them, then the model's. Facts belong to the request's
        end user of the key (``user_id``; "" = the key's shared memory). A text steering
        the assistant against others (``core.extraction.guard``) is held or dropped
        first, for every mode (``guard`` False: a held message an admin released)."""
        steers: dict[str, Steer] = {}
        if guard:
            texts, steers = self._guarded(owner, session_id, texts, user_id, origin)
        if not texts:
            return []
        settings = self.clients.settings.get()
        if settings.extraction_mode == "llm":
            asked = self._ask(owner, session_id, texts, settings, user_id, origin)
            if asked is not None:
                return asked
        found = self.rule_items(owner, session_id, texts, user_id, guard=guard, steers=steers)
        stored = self._write(owner, found, origin) or []
        if settings.extraction_mode == "hybrid":
            more = self._ask(owner, session_id, texts, settings, user_id, origin)
            stored = [*stored, *(more or [])]
        return stored

    def _ask(
        self,
        owner: str,
        session_id: str,
        texts: Texts,
        settings: MemorySettings,
        user_id: str,
        origin: Origin | None,
    ) -> list[Reconciled] | None:
        """The model's answer for the exchange, written; None when it fell back."""
        answer = propose(self.clients, owner, session_id, texts, settings, user_id)
        if answer is None:
            return None
        return self._write(owner, answer.items, origin, answer) if answer.asked else []

    def _write(
        self,
        owner: str,
        items: list[Reconcile],
        origin: Origin | None,
        answer: Proposal | None = None,
    ) -> list[Reconciled] | None:
        """The one place a job stores what extraction found, the rules' facts or the
        model's ``answer``: stamped with where they were said, cut to what the key may
        keep (``overQuota``), reconciled in one transaction, and counted. The rules'
        facts count as ``stored``/``superseded`` (a failed write as ``failed``, raised);
        the model's as an applied answer (``llm_stats``; any failure is its ``invalid``
        fallback, None, and the rules' facts stand)."""
        if origin is not None:
            items = origin.stamp(items)
        kept: list[Reconcile] = []
        try:
            kept = within(self.clients.quotas, owner, items, self.stats)
            results = self.clients.reconcile(kept) if kept else []
        except Exception as exc:
            if answer is not None:
                not_applied(self.clients.llm_stats, exc)
                return None
            if kept:  # the write failed, not the quota's read
                self.stats["failed"] += 1
            raise
        if answer is not None:
            self.clients.llm_stats.record_ok(answer.ops)
            return results
        self.stats["stored"] += sum(1 for i in kept if i.memory is not None)
        superseded = sum(len(r.superseded) for r in results)
        self.stats["superseded"] = self.stats.get("superseded", 0) + superseded
        return results

    def _guarded(
        self, owner: str, session_id: str, texts: Texts, user_id: str, origin: Origin | None
    ) -> tuple[Texts, dict[str, Steer]]:
        """The texts the guard lets pass, with the steering reader's reading of the
        person's; the others are counted and dropped or held (``_hold``). The guard is
        the patterns, then the reader: what it reads as a rule against others is
        refused alike."""
        kept: Texts = []
        refused: list[NewHeld] = []
        said = origin or Origin(utcnow())
        reasons = [unsafe(text) for text, _source in texts]  # the patterns read each once
        passed = [t for (t, s), r in zip(texts, reasons, strict=True) if s == "user" and r is None]
        steers = steered(self.attributes, passed)
        for (text, source), reason in zip(texts, reasons, strict=True):
            steer = steers.get(text) if source == "user" else None
            if reason is None and steer is not None and steer.attack >= ATTACK_AT:
                reason = steer.kind
                self.stats["guarded_by_model"] = self.stats.get("guarded_by_model", 0) + 1
            if reason is None:
                kept.append((text, source))
            else:
                refused.append(
                    NewHeld(
                        owner,
                        user_id,
                        session_id,
                        text,
                        source,
                        reason,
                        said.said_at,
                        said.request_id,
                    )
                )
        self._hold(owner, user_id, refused)
        return kept, steers

    def _hold(self, owner: str, user_id: str, refused: list[NewHeld]) -> None:
        """What the guard refused, counted and dropped or, with ``quarantineGuarded``,
        held for review (``engine.quarantine``), before any fact of the job is written."""
        if not refused:
            return
        if self.quarantines():
            said_at = refused[0].said_at  # one origin for the whole job

            def hold(tx: Writer) -> None:
                # held only if its subject was not erased since it was said
                if not tx.erased_since(owner, user_id, said_at):
                    for item in refused:
                        tx.hold(item)

            self.store.write(hold)
            self.stats["quarantined"] = self.stats.get("quarantined", 0) + len(refused)
            log.info(
                "extraction: %d message(s) held for review: they steer the assistant", len(refused)
            )
        else:
            self.stats["guarded"] = self.stats.get("guarded", 0) + len(refused)
            log.info("extraction: %d message(s) not kept: they steer the assistant", len(refused))

    def release(self, held: Held) -> list[Reconciled]:
        """Extract a held message as if the guard had let it pass (an admin read it),
        unless its subject was erased since it was said."""
        origin = Origin(held.said_at, held.request_id)
        texts = [(held.text, held.source)]
        return self.extract_and_store(
            held.api_key_id, held.session_id, texts, held.user_id, origin, guard=False
        )

    def _held(self, owner: str, user_id: str) -> dict[str, tuple[str, ...]]:
        """The single-valued attributes (and the ones a switch replaces) the person
        (this end user of the key, exactly: the rows a new value may retire) holds a
        current captured value of, with the slots of those values; one read, only when
        the classifier backs the rules."""
        if self.attributes is None or not self.attributes.available():
            return {}
        flt = Filter(
            owners=(owner,),
            now=utcnow(),
            user_id=user_id,
            shared=False,
            profile=SINGLE_ATTRIBUTES,
            pinned=False,
        )
        held: dict[str, tuple[str, ...]] = {}
        for m in self.store.read().recent(flt, HELD_ROWS):
            if m.attribute and m.slot:
                held[m.attribute] = (*held.get(m.attribute, ()), m.slot)
        return held

    def rule_items(
        self,
        owner: str,
        session_id: str,
        texts: Texts,
        user_id: str = "",
        *,
        guard: bool = True,
        steers: Mapping[str, Steer] | None = None,
    ) -> list[Reconcile]:
        """What the rules (backed by the classifier) find, as reconcile items: a fact of
        a single-valued slot supersedes the owner's other memories of that slot. The
        standing preferences the steering reader read (``steers``) and no rule did are
        kept too."""
        extracted_at = to_iso(utcnow())
        unique: dict[str, Fact] = {}
        held: dict[str, tuple[str, ...]] | None = None
        for text, source in texts:
            weak: list[str] = []
            facts, leftovers = extract(text, source=source, guard=guard, weak=weak)
            said = text if source == "user" else ""
            if said and held is None:
                held = self._held(owner, user_id)
            backed = back(facts, leftovers, self.attributes, said, weak, held or ())
            if said and steers:
                steer = steers.get(text)
                backed = standing(steer, backed + preferences(steer, backed))
            if said and held and self.attributes is not None:
                backed = updated_requests(backed, self.attributes, held)
            ruled = {f.clause for f in facts}  # the rules' facts were cut already
            for fact in (p for f in backed for p in ([f] if f.clause in ruled else parts(f))):
                unique.setdefault(fact.key, settle(fact))  # the first occurrence wins
        # what a message says ended is retired before its facts are stored: "I'm a nurse
        # at St Marys now. Quit the work choir though." keeps the nurse
        ordered = sorted(unique.values(), key=lambda f: not f.key.startswith(ENDED))
        return [
            Reconcile(owner, None, supersedes=f.retracts, user_id=user_id)
            if f.is_retraction
            else Reconcile(
                owner,
                NewMemory(
                    api_key_id=owner,
                    content=f.content,
                    key=f.key,
                    type=MemoryType(f.type),
                    session_id=session_id,
                    metadata=fact_metadata(f, extracted_at),
                    user_id=user_id,
                ),
                supersedes=f.supersedes,
                user_id=user_id,
            )
            for f in ordered
        ]

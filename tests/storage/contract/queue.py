"""The contract of extraction jobs: queued, leased to one server at a time, released
(``QueueReads``, ``QueueWrites``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from memoryd.storage.base import Lease, NewJob, QueuedJob, Store
from memoryd.storage.contract.queue import QueueReads, QueueWrites
from tests.storage.contract.support import HOUR, NOW, Contract, job


class QueueContract(Contract):
    covers = (QueueReads, QueueWrites)

    def test_extraction_queue(self, store: Store) -> None:
        r = store.read()
        assert r.queued_extractions() == []
        texts = [("I live in Paris", "user"), ("Noted!", "assistant")]
        first = store.write(lambda w: w.queue_extraction(job("a", "s1", texts, NOW)))
        second = store.write(
            lambda w: w.queue_extraction(job("b", "", [("hi", "user")], NOW, user_id="u1"))
        )
        third = store.write(lambda w: w.queue_extraction(job("a", "s2", [], NOW)))
        assert isinstance(first, int)
        assert first < second < third
        assert r.queued_extractions() == [
            QueuedJob(first, "a", "s1", texts, ""),
            QueuedJob(second, "b", "", [("hi", "user")], "u1"),
            QueuedJob(third, "a", "s2", [], ""),
        ]
        # Another end user's jobs: none to drop (an erasure's own test drops some).
        assert store.write(lambda w: w.drop_queued_extractions("b", "u2")) == 0
        store.write(lambda w: w.unqueue_extraction(second))
        store.write(lambda w: w.unqueue_extraction(12345))  # unknown: nothing happens
        assert [job.id for job in r.queued_extractions()] == [first, third]
        store.write(lambda w: w.unqueue_extraction(first))
        store.write(lambda w: w.unqueue_extraction(third))
        assert r.queued_extractions() == []
        fourth = store.write(lambda w: w.queue_extraction(job("a", "s", texts, NOW)))
        assert fourth > third  # ids are never reused

    def test_a_queued_job_keeps_where_it_was_said(self, store: Store) -> None:
        """A job deferred to the table keeps its request's start and id, so
        a later erasure of its subject still drops it, whoever claims it."""
        said = NOW - timedelta(seconds=7)
        deferred = NewJob("a", "s", [("hi", "user")], NOW, "ann", said_at=said, request_id="r-1")
        job_id = store.write(lambda w: w.queue_extraction(deferred))
        (queued,) = store.read().queued_extractions()
        assert (queued.id, queued.said_at, queued.request_id) == (job_id, said, "r-1")
        (claimed,) = store.write(lambda w: w.claim_extractions("me", NOW, NOW + HOUR, 5))
        assert claimed == queued

    def test_extraction_leases(self, store: Store) -> None:
        """A job held by a live server is not claimed; one whose lease ran out, or that
        nobody holds, is claimed once, by one worker, oldest first."""
        held = NewJob("a", "", [("held", "user")], NOW, "", "alive", NOW + HOUR)
        lapsed = NewJob("a", "", [("lapsed", "user")], NOW, "", "dead", NOW - HOUR)
        free = NewJob("b", "s", [("free", "user")], NOW, "u1")
        ids = [store.write(lambda w, j=j: w.queue_extraction(j)) for j in (held, lapsed, free)]
        r = store.read()
        assert r.lease_of(ids[0]) == Lease("alive", NOW + HOUR)
        assert r.lease_of(ids[2]) == Lease(None, None)
        assert r.lease_of(424242) is None

        until = NOW + 2 * HOUR
        taken = store.write(lambda w: w.claim_extractions("me", NOW, until, 10))
        assert [j.id for j in taken] == ids[1:]
        assert taken[1] == QueuedJob(ids[2], "b", "s", [("free", "user")], "u1")
        assert r.lease_of(ids[1]) == Lease("me", until)
        # Claimed now: nobody else gets them, and the live one's job stays its own.
        assert store.write(lambda w: w.claim_extractions("other", NOW, until, 10)) == []
        # Its lease running out (time passing) frees the job for the next claimer, never
        # for the server that holds it (a live server's jobs wait in its memory).
        later = NOW + 3 * HOUR
        mine = store.write(lambda w: w.claim_extractions("me", later, later + HOUR, 10))
        assert [j.id for j in mine] == [ids[0]]  # the lapsed "alive" job, not its own two
        again = store.write(lambda w: w.claim_extractions("other", later, later + HOUR, 1))
        assert [j.id for j in again] == [ids[1]]  # oldest first, at most ``limit``
        assert r.lease_of(ids[1]) == Lease("other", later + HOUR)

    def test_a_stopping_server_releases_its_jobs(self, store: Store) -> None:
        """Jobs a server gives back are claimed at once by another (no lease to wait
        out); another server's jobs stay its own."""
        mine = NewJob("a", "", [("mine", "user")], NOW, "", "stopping", NOW + HOUR)
        theirs = NewJob("a", "", [("theirs", "user")], NOW, "", "alive", NOW + HOUR)
        ids = [store.write(lambda w, j=j: w.queue_extraction(j)) for j in (mine, theirs)]
        assert store.write(lambda w: w.claim_extractions("next", NOW, NOW + HOUR, 10)) == []
        assert store.write(lambda w: w.release_extractions("stopping")) == 1
        assert store.read().lease_of(ids[0]) == Lease(None, None)
        assert store.read().lease_of(ids[1]) == Lease("alive", NOW + HOUR)
        taken = store.write(lambda w: w.claim_extractions("next", NOW, NOW + HOUR, 10))
        assert [j.id for j in taken] == [ids[0]]
        assert store.write(lambda w: w.release_extractions("nobody")) == 0
        # a job still running at the stop keeps its lease: nobody runs it twice
        running = NewJob("a", "", [("running", "user")], NOW, "", "stopping", NOW + HOUR)
        run_id = store.write(lambda w: w.queue_extraction(running))
        assert store.write(lambda w: w.release_extractions("stopping", keep=(run_id,))) == 0
        assert store.read().lease_of(run_id) == Lease("stopping", NOW + HOUR)

    def test_concurrent_claims_never_share_a_job(self, store: Store) -> None:
        ids = [
            store.write(lambda w, i=i: w.queue_extraction(job("a", "", [(f"t{i}", "user")], NOW)))
            for i in range(40)
        ]

        def claim(worker: str) -> list[int]:
            got: list[int] = []
            while batch := store.write(lambda w: w.claim_extractions(worker, NOW, NOW + HOUR, 3)):
                got += [j.id for j in batch]
            return got

        with ThreadPoolExecutor(4) as pool:
            claimed = list(pool.map(claim, ["w1", "w2", "w3", "w4"]))
        flat = [i for part in claimed for i in part]
        assert sorted(flat) == ids  # every job once, none twice

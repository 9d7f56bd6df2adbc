"""The contract of erasure receipts, and the queued jobs an erasure drops
(``ErasureReads``, ``ErasureWrites``)."""

from __future__ import annotations

from datetime import timedelta

from memoryd.models import Erasure
from memoryd.storage.base import Store
from memoryd.storage.contract.erasures import ErasureReads, ErasureWrites
from tests.storage.contract.support import NOW, Contract, job


class ErasureContract(Contract):
    covers = (ErasureReads, ErasureWrites)

    def test_erasure_receipts_and_queued_jobs(self, store: Store) -> None:
        """The queued jobs of an erased subject go; receipts are kept, newest
        first, per key; ``erased_since`` answers for the end user or the whole key."""
        texts = [("I live in Paris", "user")]
        for owner, user in (("a", "ann"), ("a", "bob"), ("b", "ann"), ("a", "ann")):
            store.write(
                lambda w, o=owner, u=user: w.queue_extraction(job(o, "", texts, NOW, user_id=u))
            )
        assert store.write(lambda w: w.drop_queued_extractions("a", "ann")) == 2
        assert [(j.owner, j.user_id) for j in store.read().queued_extractions()] == [
            ("a", "bob"),
            ("b", "ann"),
        ]
        assert store.write(lambda w: w.drop_queued_extractions("a", None)) == 1
        first = Erasure("er_1", "a", "ann", NOW, {"memories": 3, "extractionJobs": 2})
        whole = Erasure("er_2", "b", None, NOW + timedelta(seconds=5), {"memories": 1})
        store.write(lambda w: w.record_erasure(first))
        store.write(lambda w: w.record_erasure(whole))
        r = store.read()
        assert r.erasures("a", 10) == [first]
        assert [e.id for e in r.erasures(None, 10)] == ["er_2", "er_1"]
        assert r.erasures(None, 1)[0].counts == {"memories": 1}
        assert r.erased_since("a", "ann", NOW - timedelta(seconds=1))
        assert not r.erased_since("a", "ann", NOW + timedelta(seconds=1))  # before the job
        assert not r.erased_since("a", "bob", NOW - timedelta(seconds=1))
        assert r.erased_since("b", "anyone", NOW)  # the whole key
        store.scrub()  # SQLite: the log truncated; PostgreSQL: nothing to do
        assert store.read().erasures("a", 10) == [first]

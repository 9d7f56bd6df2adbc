"""The contract of what one owner keeps, for the per-key quotas (``UsageReads``)."""

from __future__ import annotations

from memoryd.storage.base import Store, Usage
from memoryd.storage.contract.usage import UsageReads
from tests.storage.contract.support import Contract, add


class UsageContract(Contract):
    covers = (UsageReads,)

    def test_usage_counts_rows_and_bytes_of_one_owner(self, store: Store) -> None:
        """What a key's quota counts: its rows (history too) and their UTF-8 bytes."""
        r = store.read()
        assert r.usage("alpha") == Usage(0, 0)
        add(store, "alpha", "abcd")
        add(store, "alpha", "h\u00e9llo", user_id="u1")  # 6 bytes in UTF-8
        add(store, "beta", "x" * 50)
        assert r.usage("nobody") == Usage(0, 0)
        beta = r.usage("beta")
        meta = beta.size - 50  # one row's metadata, the same JSON on every row here
        assert beta.rows == 1
        assert meta >= 0
        assert r.usage("alpha") == Usage(2, 4 + 6 + 2 * meta)

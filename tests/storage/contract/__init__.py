"""The Store contract (``memoryd.storage.base``) as executable tests, for every backend.

One module per concern, mirroring ``memoryd/storage/contract/``: each holds a
``<Concern>Contract`` class of tests over that concern's protocols. ``StoreContract`` is
all of them; a backend's module subclasses it as ``Test<Backend>`` and provides one
``store`` fixture yielding an open, empty store (closed afterwards)::

    class TestSqliteStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path: Path) -> Iterator[Store]: ...

The tests speak only the protocol (``Store``, ``Reader``, ``Writer`` and their value
types): never SQL, never a driver. By convention a ``Reader`` is ``r`` and a ``Writer``
is ``w``: the last test checks that every member of each concern's protocols is called
in that concern's module, so a method added to the protocol without a contract test
fails, and so does a concern protocol without a contract class.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Protocol

from memoryd.storage.base import Reader, Store, Writer
from tests.storage.contract.context import ContextContract
from tests.storage.contract.erasures import ErasureContract
from tests.storage.contract.flags import FlagContract
from tests.storage.contract.history import HistoryContract
from tests.storage.contract.keys import KeyContract
from tests.storage.contract.kv import SettingsContract
from tests.storage.contract.memories import MemoryContract
from tests.storage.contract.outbox import OutboxContract
from tests.storage.contract.quarantine import QuarantineContract
from tests.storage.contract.queue import QueueContract
from tests.storage.contract.store import SessionContract
from tests.storage.contract.support import NOW, add, protocol_members
from tests.storage.contract.usage import UsageContract

__all__ = ["NOW", "StoreContract", "add", "protocol_members"]


def _own_members(proto: type) -> set[str]:
    names = {n for n in vars(proto) if not n.startswith("_")}
    return names | {n for n in getattr(proto, "__annotations__", {}) if not n.startswith("_")}


class StoreContract(
    MemoryContract,
    HistoryContract,
    ContextContract,
    UsageContract,
    SettingsContract,
    KeyContract,
    QueueContract,
    FlagContract,
    QuarantineContract,
    ErasureContract,
    OutboxContract,
    SessionContract,
):
    """Every behaviour of the Store contract. Subclasses provide ``store``."""

    def test_every_protocol_member_is_exercised(self) -> None:
        members = protocol_members()
        assert {"read", "write", "upsert", "outbox_rows", "capabilities"} <= members
        concerns = {
            cls
            for proto in (Store, Reader, Writer)
            for cls in proto.__mro__
            if getattr(cls, "_is_protocol", False) and cls is not Protocol and _own_members(cls)
        }
        covered: set[type] = set()
        missing = []
        for contract in type(self).__mro__:
            protocols = vars(contract).get("covers", ())
            if not protocols:
                continue
            source = Path(inspect.getfile(contract)).read_text(encoding="utf-8")
            for proto in protocols:
                covered.add(proto)
                missing += [
                    f"{contract.__name__}: {name}"
                    for name in sorted(_own_members(proto))
                    if not re.search(rf"(?:\)|\b(?:r|w|w2|snap|store))\.{name}\b", source)
                ]
        assert concerns - covered == set(), "concern protocols without a contract class"
        assert missing == [], f"protocol members without a contract test: {missing}"

"""The gateway through real HTTP: the official ``openai`` and ``anthropic`` clients
against memoryd on a loopback port, in front of the fake upstreams of
``memoryd.testing`` (the one outside party). ``wire`` is memoryd serving one engine with
both fakes behind it, for the tests of each client API's wire format."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memoryd.engine import MemoryEngine
from tests.wire_support import Wire, running_wire


@pytest.fixture
def wire(engine: MemoryEngine) -> Iterator[Wire]:
    with running_wire(engine) as wire:
        yield wire

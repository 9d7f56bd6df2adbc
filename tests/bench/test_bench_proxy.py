"""The proxy benchmark's pure parts (bench/proxy.py): CPU accounting from
``/proc/<pid>/stat`` lines, the load generator's HTTP/1.1 response reading, the
distinct queries, the per-round medians and the goals table. No process is started
and nothing is timed."""

from __future__ import annotations

import asyncio
from typing import Any

from bench import proxy

# A real /proc/<pid>/stat layout; the command name holds a space and parentheses.
STAT = (
    "4242 (python (memoryd) x) S 4200 4242 4200 0 -1 4194560 20771 0 0 0 "
    "1234 567 0 0 20 0 9 0 123456 987654321 54321 18446744073709551615"
)


def test_stat_fields_reads_ppid_and_user_plus_system_ticks() -> None:
    assert proxy.stat_fields(STAT) == (4200, 1234 + 567)


def test_tree_ticks_sums_a_process_and_its_descendants_only() -> None:
    stats = {
        10: (1, 100),  # the server
        11: (10, 20),  # its worker
        12: (11, 3),  # the worker's child
        20: (1, 1000),  # someone else
        21: (20, 50),
    }
    assert proxy.tree_ticks(stats, 10) == 123
    assert proxy.tree_ticks(stats, 11) == 23
    assert proxy.tree_ticks(stats, 99) == 0  # gone


def test_cpu_ms_per_request() -> None:
    # 150 ticks at 100 Hz = 1.5 s over 1,000 requests
    assert proxy.cpu_ms_per_request(1000, 1150, 1000, 100) == 1.5
    assert proxy.cpu_ms_per_request(5, 9, 0, 100) is None


def test_parse_head() -> None:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 42\r\ncontent-type: application/json\r\n\r\n"
    assert proxy.parse_head(head) == (200, 42, False)
    head = b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert proxy.parse_head(head) == (503, None, True)


def test_response_reads_exactly_one_answer_of_each_framing() -> None:
    async def read_two() -> tuple[int, int, bytes]:
        reader = asyncio.StreamReader()
        reader.feed_data(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            b"5\r\nhello\r\n3;x=1\r\nabc\r\n0\r\n\r\n"
            b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 4\r\n\r\nnope"
            b"NEXT"
        )
        first = await proxy._response(reader)
        second = await proxy._response(reader)
        return first, second, await reader.readexactly(4)

    assert asyncio.run(read_two()) == (200, 401, b"NEXT")


def test_different_never_repeats_a_message() -> None:
    text = proxy.different(["a", "b", "a b"])
    messages = [text(i) for i in range(10)]
    assert len(set(messages)) == 10
    assert messages[:3] == ["a", "b", "a b"]
    assert messages[3] == "a (round 2)"


def test_summarise_takes_medians_over_rounds() -> None:
    reps: list[dict[str, float | None]] = [
        {"added_p50_ms": 1.0, "rps": 900.0, "errors": 0, "cpu_ms_per_request": None},
        {"added_p50_ms": 3.0, "rps": 1100.0, "errors": 2, "cpu_ms_per_request": 0.5},
        {"added_p50_ms": 2.0, "rps": 1000.0, "errors": 0, "cpu_ms_per_request": 0.7},
    ]
    row = proxy.summarise("pure", reps)
    assert row["id"] == "pure"
    assert row["config"] == proxy.LABELS["pure"]
    assert row["added_p50_ms"] == 2.0
    assert row["rps"] == 1000.0
    assert row["cpu_ms_per_request"] == 0.6  # the median of the two measured
    assert row["p99_ms"] is None
    assert (row["errors"], row["rounds"], row["note"]) == (2, 3, "")


def _row(config: str, **values: Any) -> dict[str, Any]:
    return proxy.summarise(config, []) | values


def test_goals_compare_each_measure_with_its_target() -> None:
    rows = [
        _row("direct", rps=3000.0),
        _row("pure", added_p50_ms=0.8, added_p99_ms=3.0, rps=1000.0),
        _row("keyword", added_p50_ms=2.6, rps=450.0),
        _row("minilm_different", added_p50_ms=None, note="failed"),
        _row("minilm10k_different", added_p50_ms=2.4, added_p99_ms=6.0),
    ]
    met = {(g["config"], g["metric"]): g["met"] for g in proxy.goals(rows)}
    assert met == {
        ("pure", "added_p50_ms"): True,
        ("pure", "added_p99_ms"): False,  # < 3 ms, strictly
        ("pure", "rps"): True,  # >= 1000
        ("keyword", "added_p50_ms"): False,
        ("keyword", "rps"): True,
        ("minilm_different", "added_p50_ms"): False,  # not measured
        ("minilm_different", "added_p99_ms"): False,
        ("minilm10k_different", "added_p50_ms"): True,
        ("minilm10k_different", "added_p99_ms"): False,  # < 6 ms, strictly
    }
    goals = proxy.goals(rows)
    assert all({"goal", "target", "measured", "met"} <= set(g) for g in goals)
    assert (goals[0]["target"], goals[0]["measured"]) == ("< 1", 0.8)

    table = proxy.markdown(rows, goals)
    lines = table.splitlines()
    assert lines[0].startswith("| config | added p50 | added p99 | added stream TTFB |")
    assert "| direct upstream (the fake, no proxy) | 0 (baseline:" in lines[2]
    assert "| 0.80 ms |" in lines[3]
    assert "| pure proxy added p99 < 3 ms | 3.00 | NO |" in table

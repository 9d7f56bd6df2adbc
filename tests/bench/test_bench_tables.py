"""The generated regions of docs/benchmarks.md and docs/benchmarks/*.md: each named
region is its section of ``bench.tables`` rendered from ``bench/results/*.json``, the
committed pages match what the results say, and a missing results file is said, not a
crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.tables import NAMED, SECTIONS, Page, fill_named, rewrite

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
DOCS = REPO / "docs" / "benchmarks.md"
PLOTS = REPO / "docs" / "benchmarks"
PAGES = [DOCS, *sorted(PLOTS.glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_committed_pages_match_their_results(page: Path) -> None:
    """Rerun a stage, then ``python -m bench --only plots,tables``: the regions follow."""
    text = page.read_text()
    assert fill_named(text, Page(RESULTS, page, PLOTS)) == text, (
        f"{page.relative_to(REPO)} is out of date: python -m bench --only plots,tables"
    )


def test_the_readers_page_holds_every_headline_and_stays_short() -> None:
    text = DOCS.read_text()
    names = [m.group(1) for m in NAMED.finditer(text)]
    headlines = ["glance", "peers", "extraction", "gateway", "stores", "scale-out"]
    assert names == [*headlines, "latency", "abuse"]
    assert len(text.splitlines()) <= 275  # the lab notes live in docs/benchmarks/*.md
    for plot in ("retrieval-vs-peers", "extraction-quality", "gateway-overhead", "stores"):
        assert f"(benchmarks/{plot}.png)" in text
    for plot in ("scale-out", "latency-vs-size", "abuse"):
        assert f"(benchmarks/{plot}.png)" in text
    every = "".join(p.read_text() for p in PAGES)
    assert {m.group(1) for m in NAMED.finditer(every)} == set(SECTIONS) - {"machine"}


def test_every_section_renders_without_its_results(tmp_path: Path) -> None:
    page = Page(tmp_path, tmp_path / "benchmarks.md", tmp_path / "benchmarks")
    for name, section in SECTIONS.items():
        text = section(page)
        assert "No results yet" in text or name in ("glance",), name


def test_regions_are_rewritten_in_place_and_the_rest_is_left(tmp_path: Path) -> None:
    results, docs = tmp_path / "results", tmp_path / "bench.md"
    results.mkdir()
    rows = [
        {"format": "chat", "stream": False, "added_p50_ms": 4.0, "vs_chat": 1.0},
        {"format": "chat", "stream": True, "added_p50_ms": 4.5, "vs_chat": 1.0},
        {"format": "messages", "stream": False, "added_p50_ms": 4.4, "vs_chat": 1.1},
    ]
    machine = {"commit": "a" * 40, "date": "2026-01-01", "cpu_model": "AMD EPYC 7B13"}
    machine |= {"cores": 2, "load_average_start": [0.5, 0.4, 0.3]}
    (results / "gateway_formats.json").write_text(json.dumps({"rows": rows, "machine": machine}))
    (tmp_path / "bench").mkdir()
    topic = tmp_path / "bench" / "gateway.md"
    topic.write_text(
        "# Gateway\n\nnotes\n\n<!-- bench:start gateway-details -->\nold\n"
        "<!-- bench:end gateway-details -->\n"
    )
    docs.write_text(
        "# B\n\nhand\n\n<!-- bench:start gateway -->\nold\n<!-- bench:end gateway -->\n\n"
        "<!-- bench:start nosuch -->\nkept\n<!-- bench:end nosuch -->\ntail\n"
    )
    pages = rewrite(results, docs, tmp_path / "plots", [])
    assert pages == [docs, topic]
    text = docs.read_text()
    assert text.startswith("# B\n\nhand\n\n<!-- bench:start gateway -->\n")
    assert "\nold\n" not in text
    assert "No results yet (`bench/results/proxy.json`)" in text
    assert "chat 4.00 / 4.50 ms (\u00d71.00 / 1.00), messages 4.40 / \u2013 ms" in text
    assert "*Measured: `gateway_formats.json`: commit `aaaaaaaaaa`, 2026-01-01, AMD EPYC" in text
    assert "<!-- bench:start nosuch -->\nkept\n<!-- bench:end nosuch -->\ntail\n" in text
    details = topic.read_text()
    assert details.startswith("# Gateway\n\nnotes\n\n<!-- bench:start gateway-details -->\n")
    # a region ending in a table keeps a blank line before its end marker
    assert "| 1.10 |\n\n*Measured" in details or "|\n\n<!-- bench:end" in details
    assert "| messages | no | 4.40 | 1.10 |" in details

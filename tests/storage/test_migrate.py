"""``memoryd migrate --to postgresql://...``: a SQLite data dir copied to a real
PostgreSQL, history, end users, keys and settings included, and idempotent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memoryd.cli import main
from memoryd.config.upstreams import Provider, save_providers, stored_providers
from memoryd.models import NewMemory, Reconcile
from memoryd.server import shared_admin_token
from tests.conftest import make_engine
from tests.embedders import no_source

pytest.importorskip("psycopg")


def _export(engine: Any, owner: str) -> list[tuple[Any, ...]]:
    fields = ("id", "userId", "key", "content", "createdAt", "supersededAt", "supersededBy")
    return sorted(tuple(m[f] for f in fields) for m in engine.export(owner))


def test_migrate_copies_everything_once(tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "data"
    source = make_engine(data, resolver=no_source)
    source.create(NewMemory("team", "User likes tea", key="drink"))
    source.create(NewMemory("team", "User is vegetarian", user_id="alice"))
    home = NewMemory("solo", "User lives in Berlin", metadata={"slot": "home"})
    source.reconcile([Reconcile("solo", home)])
    moved = NewMemory("solo", "User lives in Lisbon", metadata={"slot": "home"})
    source.reconcile([Reconcile("solo", moved, supersedes=("home",))])
    kept, kept_secret = source.keys.create("kept", memory_enabled=False)
    gone, gone_secret = source.keys.create("gone")
    source.keys.revoke(gone.id)
    save_providers(source.store, [Provider("llm", "http://127.0.0.1:9/v1", "secret")])
    source.settings.update({"maxTokens": 777})
    (data / "admin_token").write_text("the-single-servers-admin-token\n", encoding="utf-8")
    expected = {owner: _export(source, owner) for owner in ("team", "solo")}
    source.close()

    runner = CliRunner()
    first = runner.invoke(main, ["--data-dir", str(data), "--json", "migrate", "--to", pg_url])
    assert first.exit_code == 0, first.output
    report = json.loads(first.output.strip().splitlines()[-1])
    assert report["imported"] == 4
    assert report["keysCopied"] == 2
    assert all(check["ok"] for check in report["verified"].values())
    assert report["pendingVectors"] == 4  # embedded by the first server on the new store
    assert report["adminToken"].startswith("copied")

    target = make_engine(tmp_path / "other", {"MEMORYD_DATABASE_URL": pg_url}, resolver=no_source)
    try:
        assert {owner: _export(target, owner) for owner in expected} == expected
        found = target.keys.authenticate(kept_secret)
        assert found is not None
        assert (found.id, found.memory_enabled) == (kept.id, False)
        assert target.keys.authenticate(gone_secret) is None  # revoked stays revoked
        assert [p.name for p in stored_providers(target.store)] == ["llm"]
        assert target.settings.get().max_tokens == 777
        # Every replica accepts the token the single server had (never printed).
        assert shared_admin_token(target.store) == ("the-single-servers-admin-token", False)
        assert "the-single-servers-admin-token" not in first.output
    finally:
        target.close()

    # revoked here after the first copy: a re-run revokes it there too (it stayed live)
    source = make_engine(data, resolver=no_source)
    source.keys.revoke(kept.id)
    source.close()
    again = runner.invoke(main, ["--data-dir", str(data), "--json", "migrate", "--to", pg_url])
    assert again.exit_code == 0, again.output
    second = json.loads(again.output.strip().splitlines()[-1])
    assert (second["imported"], second["keysCopied"]) == (0, 0)
    assert second["verified"]["memories"]["target"] == 4
    assert second["adminToken"].startswith("copied")  # the same one: nothing changes
    target = make_engine(tmp_path / "other", {"MEMORYD_DATABASE_URL": pg_url}, resolver=no_source)
    try:
        assert target.keys.authenticate(kept_secret) is None
    finally:
        target.close()


def test_migrate_refuses_what_is_not_a_postgresql_url(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--data-dir", str(tmp_path / "d"), "migrate", "--to", "sqlite:///x.db"]
    )
    assert result.exit_code == 2
    assert "postgresql://" in result.output

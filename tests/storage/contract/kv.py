"""The contract of settings: JSON values under string keys, and the first writer
winning a default (``SettingsReads``, ``SettingsWrites``)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from memoryd.storage.base import Store
from memoryd.storage.contract.kv import SettingsReads, SettingsWrites
from tests.storage.contract.support import HOUR, NOW, Contract


class SettingsContract(Contract):
    covers = (SettingsReads, SettingsWrites)

    def test_settings_round_trip(self, store: Store) -> None:
        values: dict[str, Any] = {
            "dict": {"nested": [1, 2, {"x": "y"}], "ok": True},
            "list": [1, "two", None],
            "str": "héllo ✓",
            "int": 7,
            "bool": False,
            "none": None,
        }
        r = store.read()
        assert r.settings() == {}
        assert r.setting("str") is None
        assert r.setting("str", "fallback") == "fallback"
        store.write(lambda w: w.write_settings(values, NOW))
        assert r.settings() == values
        for key, value in values.items():
            assert r.setting(key, "fallback") == value
        assert r.setting("none", "fallback") is None  # stored null, not missing
        assert r.setting("missing", {"d": 1}) == {"d": 1}

        # Overwrite one, delete others.
        store.write(lambda w: w.write_settings({"int": 8}, NOW + HOUR))
        assert r.setting("int") == 8
        store.write(lambda w: w.delete_settings(["int", "str", "missing"]))
        assert r.setting("int", "gone") == "gone"
        assert set(r.settings()) == {"dict", "list", "bool", "none"}

    def test_settings_prefix(self, store: Store) -> None:
        store.write(lambda w: w.write_settings({"a": 1, "b": [2]}, NOW, prefix="embedding."))
        store.write(lambda w: w.write_settings({"a": "top", "embeddingX": 3}, NOW))
        r = store.read()
        assert r.settings("embedding.") == {"a": 1, "b": [2]}
        assert r.setting("embedding.a") == 1
        assert r.setting("a") == "top"
        assert r.settings("embedding") == {".a": 1, ".b": [2], "X": 3}
        assert r.settings() == {"embedding.a": 1, "embedding.b": [2], "a": "top", "embeddingX": 3}
        assert r.settings("nothing.") == {}
        store.write(lambda w: w.delete_settings(["a"], prefix="embedding."))
        assert r.settings("embedding.") == {"b": [2]}
        assert r.setting("a") == "top"

    def test_setting_default_keeps_the_first_value(self, store: Store) -> None:
        assert store.write(lambda w: w.setting_default("token", "first", NOW)) == "first"
        assert store.write(lambda w: w.setting_default("token", "second", NOW)) == "first"
        assert store.read().setting("token") == "first"

    def test_racing_setting_defaults_agree_on_one_winner(self, store: Store) -> None:
        """Four servers starting at once each propose a secret: all get the same one."""
        with ThreadPoolExecutor(4) as pool:
            got = list(
                pool.map(
                    lambda i: store.write(lambda w: w.setting_default("shared", f"v{i}", NOW)),
                    range(4),
                )
            )
        assert len(set(got)) == 1
        assert got[0] == store.read().setting("shared")

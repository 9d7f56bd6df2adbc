"""Moving in from another memory system: OmniRoute's System Memory database
and mem0's export, each turned into memoryd's own import lines and upserted through
``import_jsonl`` (so the rules of every import hold: owner + key upsert, a second run
changes nothing, a bad row is reported and the others kept).

OmniRoute: each ``api_key_id`` becomes a memoryd key (made, with that id when it is a
valid one and free, named ``omniroute:<id>``; or the key ``mapping`` names); type, key,
content, metadata (unreadable: ``{}``), session, creation time and expiry are kept, the
update time and access counts restored after; expired rows are skipped and counted;
the memory settings memoryd understands are translated, each other one named. The
vectors are not copied: memoryd embeds the imported memories with its own embedder,
and an OmniRoute Qdrant collection is named, never reused.

mem0: ``get_all``'s records (``results`` or a bare list) go to one key, each
``user_id`` becoming an end user of it, ``run_id`` the session, ``agent_id`` kept in the
metadata; the key is ``mem0:<id>``, so a second import of the same export updates in
place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memoryd.core.scoring import parse_metadata
from memoryd.engine.keys import ApiKey, check_name
from memoryd.errors import ConflictError, MemorydError, NotFoundError, ValidationError
from memoryd.models import MemoryType, parse_iso, to_iso, utcnow

if TYPE_CHECKING:
    from memoryd.engine.service import MemoryEngine
    from memoryd.storage.sqlite.foreign import OmniRouteFile

#: OmniRoute's memory settings (its key_value keys) and memoryd's names for them.
OMNIROUTE_SETTINGS = {
    "memoryEnabled": "enabled",
    "memoryMaxTokens": "maxTokens",
    "memoryRetentionDays": "retentionDays",
    "memoryStrategy": "strategy",
    "memoryEmbeddingSource": "embeddingSource",
    "memoryEmbeddingProviderModel": "embeddingProviderModel",
    "memoryTransformersEnabled": "transformersEnabled",
    "memoryStaticEnabled": "staticEnabled",
    "memoryRerankEnabled": "rerankEnabled",
    "memoryRerankProviderModel": "rerankProviderModel",
    "memoryVectorStore": "vectorStore",
}
#: Why the other OmniRoute settings of memory are not taken over.
NOT_TRANSLATED = {
    "skillsEnabled": "OmniRoute's skills are not part of memoryd",
    "qdrantEnabled": "memoryd does not reuse OmniRoute's Qdrant collection (its vectors are "
    "another embedder's); enable memoryd's own Qdrant tier after the import",
}
TYPES = {t.value for t in MemoryType}
#: What a source kept of a memory's use: key, end user, updated, access count, last access.
Usage = tuple[str, str, datetime | None, int, datetime | None]


@dataclass
class KeyMove:
    """One source owner and where its memories go."""

    source: str
    key_id: str
    key_name: str
    created: bool = False
    secret: str | None = None  # a key made now: its secret, shown once
    rows: int = 0
    expired: int = 0
    imported: int = 0
    updated: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "keyId": self.key_id,
            "keyName": self.key_name,
            "created": self.created,
            "secret": self.secret,
            "rows": self.rows,
            "expired": self.expired,
            "imported": self.imported,
            "updated": self.updated,
            "skipped": self.skipped,
            "errors": self.errors,
        }


@dataclass
class MoveReport:
    """What an import from another system did (or, ``dry_run``, would do)."""

    source: str
    dry_run: bool
    keys: list[KeyMove] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)  # memoryd's names
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dryRun": self.dry_run,
            "keys": [k.to_dict() for k in self.keys],
            "totals": {
                name: sum(getattr(k, name) for k in self.keys)
                for name in ("rows", "expired", "imported", "updated", "skipped")
            },
            "errors": sum(len(k.errors) for k in self.keys),
            "settings": self.settings,
            "notes": self.notes,
        }


# -- keys --------------------------------------------------------------------------------


def parse_mapping(pairs: Iterable[str]) -> dict[str, str]:
    """``OLD=KEY`` pairs (an OmniRoute key id = a memoryd key's id or name), as the
    CLI's ``--map`` and the REST ``map`` parameter give them."""
    found = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not new:
            raise ValidationError(
                f"map {pair!r}: expected OLD=KEY (an OmniRoute key id = a memoryd key)",
                details=[{"field": "map", "message": "expected OLD=KEY"}],
            )
        found[old] = new
    return found


def find_key(engine: MemoryEngine, value: str) -> ApiKey | None:
    """The key with id ``value``, else the one named ``value`` (a name two keys share is
    an error naming their ids)."""
    keys = engine.keys.list(include_revoked=True)
    for key in keys:
        if key.id == value:
            return key
    named = [k for k in keys if k.name == value]
    if len(named) > 1:
        ids = ", ".join(k.id for k in named)
        raise ConflictError(f"{len(named)} keys are named {value!r}: {ids}; map to one's id")
    return named[0] if named else None


def _key_for(
    engine: MemoryEngine, source: str, mapped: str | None, prefix: str, name: str = ""
) -> KeyMove:
    """Where ``source``'s memories go, made by nothing yet: the mapped key (which must
    exist), or the key named ``name`` (default ``<prefix>:<source>``; ``created``: to
    be made)."""
    if mapped is not None:
        key = find_key(engine, mapped)
        if key is None:
            where = f"map {source or '(empty)'}={mapped}"
            raise NotFoundError(f"{where}: no key with that id or name")
        return KeyMove(source, key.id, key.name)
    name = check_name(name or (f"{prefix}:{source}" if source else f"{prefix}:(no key)"))
    key = find_key(engine, name)
    if key is not None:
        return KeyMove(source, key.id, key.name)
    return KeyMove(source, "(new)", name, created=True)


def _plan_keys(
    engine: MemoryEngine, sources: Iterable[str], mapping: Mapping[str, str], prefix: str
) -> list[KeyMove]:
    """Every source owner's key, before any is made: a mistake in ``mapping`` fails the
    import with nothing changed; a source owner whose key cannot be named is skipped
    with its error."""
    moves = []
    for source in sources:
        try:
            moves.append(_key_for(engine, source, mapping.get(source), prefix))
        except MemorydError as exc:
            if source in mapping:
                raise
            move = KeyMove(source, "", "")
            move.errors.append({"line": 0, "message": f"owner {source!r}: {exc.message}"})
            moves.append(move)
    return moves


def _make_key(engine: MemoryEngine, move: KeyMove) -> None:
    """Make the key a plan named (with the source owner's id when that is a valid, free
    key id); its secret is shown once, in the report."""
    if not move.created or move.errors:
        return
    wanted = move.source if _usable_id(engine, move.source) else None
    record, secret = engine.keys.create(move.key_name, key_id=wanted)
    move.key_id, move.secret = record.id, secret


def _usable_id(engine: MemoryEngine, value: str) -> bool:
    from memoryd.engine.keys import check_key_id

    try:
        check_key_id(value)
    except ValidationError:
        return False
    return engine.keys.get(value) is None and value not in engine.owners()


# -- OmniRoute ---------------------------------------------------------------------------


def _time(value: Any) -> datetime | None:
    if value is None or value == "" or not isinstance(value, str | int | float):
        return None
    try:
        return parse_iso(str(value).replace(" ", "T") if " " in str(value) else str(value))
    except ValueError:
        return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def omniroute_key(row: Mapping[str, Any]) -> str:
    """The upsert key of a row: its own, else one made of its id (stable across runs)."""
    return _text(row.get("key")) or f"omniroute:{_text(row.get('id')) or ''}"


def omniroute_line(row: Mapping[str, Any], owner: str) -> dict[str, Any]:
    """One OmniRoute row as a memoryd import line (the export format). A value of the
    wrong type (a BLOB where text belongs) is dropped, so the line is reported as bad
    rather than failing the import."""
    kind = _text(row.get("type")) or "factual"
    key = omniroute_key(row)
    metadata = parse_metadata(row.get("metadata"))  # unreadable JSON: {}
    metadata = {**metadata}
    metadata.setdefault("importedFrom", "omniroute")
    if _text(row.get("id")):
        metadata.setdefault("omnirouteId", row["id"])
    created, expires = _time(row.get("created_at")), _time(row.get("expires_at"))
    line: dict[str, Any] = {
        "apiKeyId": owner,
        "type": kind if kind in TYPES else "factual",
        "key": key,
        "content": _text(row.get("content")),
        "sessionId": _text(row.get("session_id")) or "",
        "metadata": metadata,
    }
    if created is not None:
        line["createdAt"] = to_iso(created)
    if expires is not None:
        line["expiresAt"] = to_iso(expires)
    return line


def _omniroute_usage(row: Mapping[str, Any]) -> Usage:
    count = row.get("access_count")
    return (
        omniroute_key(row),
        "",
        _time(row.get("updated_at")),
        count if isinstance(count, int) and count > 0 else 0,
        _time(row.get("last_accessed_at")),
    )


def from_omniroute(
    engine: MemoryEngine,
    dump: OmniRouteFile,
    mapping: Mapping[str, str] | None = None,
    *,
    dry_run: bool = False,
    settings: bool = True,
) -> MoveReport:
    """Import ``dump``; ``settings`` False leaves memoryd's settings as they are."""
    report = MoveReport("omniroute", dry_run)
    mapping = dict(mapping or {})
    unknown = sorted(set(mapping) - {str(r.get("api_key_id") or "") for r in dump.rows})
    if unknown:
        report.notes.append(f"map names owners the file does not have: {', '.join(unknown)}")
    if dump.table == "memory":
        report.notes.append("read OmniRoute's older memory table (camelCase columns)")
    now = utcnow()
    by_owner: dict[str, list[dict[str, Any]]] = {}
    for found in dump.rows:
        by_owner.setdefault(str(found.get("api_key_id") or ""), []).append(found)
    report.keys = _plan_keys(engine, by_owner, mapping, "omniroute")
    for move in report.keys:
        rows = by_owner[move.source]
        move.rows = len(rows)
        live = []
        for row in rows:
            raw = row.get("expires_at")
            expires = _time(raw)
            # an expiry OmniRoute could not read hides the row there too
            if (expires is not None and expires <= now) or (raw and expires is None):
                move.expired += 1
            else:
                live.append(row)
        if dry_run or move.errors:
            continue
        _make_key(engine, move)
        new = _new_keys(engine, move.key_id, [(omniroute_key(r), "") for r in live])
        _apply(engine, move, [omniroute_line(row, move.key_id) for row in live])
        usage = [_omniroute_usage(r) for r in live if (omniroute_key(r), "") in new]
        _restore_usage(engine, move.key_id, usage)
    report.settings, notes = _translate(dump.settings) if settings else ({}, [])
    report.notes += notes
    if not settings:
        report.notes.append("settings left as they are (not taken from the file)")
    elif report.settings.get("enabled") is False:
        report.notes.append(
            "memory is now off for every key, as it was in OmniRoute (enabled = false): "
            'turn it on with PUT /api/settings/memory {"enabled": true}'
        )
    if report.settings and not dry_run:
        engine.settings.update(report.settings)
    return report


def _new_keys(
    engine: MemoryEngine, owner: str, keys: Iterable[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Which ``(key, end user)`` of ``owner`` hold no memory yet: the rows this run
    creates, whose source's update time and counts are then kept (a second run must
    not set them back)."""
    read = engine.store.read()
    return {k for k in keys if read.get_by_key(owner, k[0], k[1]) is None}


def _apply(engine: MemoryEngine, move: KeyMove, lines: list[dict[str, Any]]) -> None:
    result = engine.import_jsonl((json.dumps(line) for line in lines), owner=move.key_id)
    move.imported, move.updated, move.skipped = result.imported, result.updated, result.skipped
    move.errors = list(result.errors)


def _restore_usage(engine: MemoryEngine, owner: str, kept: Iterable[Usage]) -> None:
    """The update time, access count and last access the source kept, on the memories
    its rows became (found by owner, key and end user)."""
    read = engine.store.read()
    found = []
    for key, user_id, updated, count, last in kept:
        memory = read.get_by_key(owner, key, user_id)
        if memory is not None:
            found.append((memory.id, updated, count, last))
    if found:
        engine.store.write(lambda tx: tx.restore_usage(found))
        for memory_id, *_ in found:
            engine.cache.invalidate(memory_id)


def _translate(settings: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """memoryd's settings for OmniRoute's memory settings, and a line for each one not
    taken (unknown, invalid here, or deliberately not reused)."""
    from memoryd.config.settings import validate_update

    taken: dict[str, Any] = {}
    notes = []
    for name, value in sorted(settings.items()):
        ours = OMNIROUTE_SETTINGS.get(name)
        if ours == "vectorStore" and value == "qdrant":
            notes.append(
                f"setting {name}=qdrant not taken: OmniRoute's Qdrant collection is not "
                "reused; enable memoryd's own Qdrant tier (PUT /api/settings/qdrant)"
            )
            continue
        if ours is not None:
            try:
                taken.update(validate_update({ours: value}))
            except ValidationError as exc:
                notes.append(f"setting {name}={value!r} not taken: {exc.message}")
            continue
        if name in NOT_TRANSLATED:
            notes.append(f"setting {name} not taken: {NOT_TRANSLATED[name]}")
        elif name.startswith("qdrant"):
            notes.append(
                f"setting {name} not taken: memoryd keeps its own Qdrant settings "
                "(PUT /api/settings/qdrant); OmniRoute's collection is not reused"
            )
        elif name.startswith("memory"):
            notes.append(f"setting {name} not taken: memoryd has no such setting")
    return taken, notes


# -- mem0 --------------------------------------------------------------------------------


def mem0_records(data: Any) -> list[dict[str, Any]]:
    """The memory records of a mem0 export: ``get_all``'s ``{"results": [...]}`` (or
    ``"memories"``), or a bare list."""
    if isinstance(data, dict):
        data = data.get("results", data.get("memories"))
    if not isinstance(data, list):
        raise ValidationError(
            'not a mem0 export: expected a list of memories or {"results": [...]}'
        )
    return [r for r in data if isinstance(r, dict)]


def mem0_line(record: Mapping[str, Any], owner: str) -> dict[str, Any]:
    metadata = record.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    metadata.setdefault("importedFrom", "mem0")
    if _text(record.get("id")):
        metadata.setdefault("mem0Id", record["id"])
    if _text(record.get("agent_id")):
        metadata.setdefault("agentId", record["agent_id"])
    run = record.get("run_id")
    line: dict[str, Any] = {
        "apiKeyId": owner,
        "userId": record.get("user_id") or None,  # not a string: reported as a bad line
        "type": "factual",
        "key": f"mem0:{record['id']}" if _text(record.get("id")) else None,
        "content": record.get("memory", record.get("text")),
        "sessionId": str(run) if isinstance(run, str | int) and run != "" else "",
        "metadata": metadata,
    }
    created = _time(record.get("created_at"))
    if created is not None:
        line["createdAt"] = to_iso(created)
    return line


def from_mem0(
    engine: MemoryEngine, data: Any, key: str | None = None, *, dry_run: bool = False
) -> MoveReport:
    """Import ``data`` (a parsed mem0 export) under ``key`` (its id or name; default a
    key named ``mem0``, made when missing)."""
    records = mem0_records(data)
    report = MoveReport("mem0", dry_run)
    move = _key_for(engine, "", key, "mem0", name="mem0")
    move.rows = len(records)
    report.keys.append(move)
    if dry_run:
        return report
    _make_key(engine, move)
    lines = [mem0_line(r, move.key_id) for r in records]
    slots = [(str(line["key"]), _user(line)) if line["key"] else None for line in lines]
    new = _new_keys(engine, move.key_id, [slot for slot in slots if slot is not None])
    _apply(engine, move, lines)
    usage = [
        (*slot, _time(r.get("updated_at")), 0, None)
        for r, slot in zip(records, slots, strict=True)
        if slot is not None and slot in new
    ]
    _restore_usage(engine, move.key_id, usage)
    users = sorted({u for r in records if isinstance(u := r.get("user_id"), str) and u})
    report.notes.append(f"{len(users)} end users: {', '.join(users[:10])}")
    return report


def _user(line: Mapping[str, Any]) -> str:
    return line["userId"] if isinstance(line["userId"], str) else ""

"""``/api/memory/import/{omniroute,mem0}``: moving in from another memory system over
REST, as ``memoryd import omniroute|mem0`` does locally.

The OmniRoute database is the request body (``application/octet-stream``, a SQLite
file); it is written to a private file under ``<data dir>/uploads`` for the read, then
zeroed and deleted (it held memories); whatever a killed process left there is removed
at the next start (``clear_uploads``). A mem0 export is a JSON body, parsed off the
event loop.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from memoryd.core.jsondepth import MAX_JSON_DEPTH, value_too_deep
from memoryd.errors import PayloadTooLargeError, ValidationError
from memoryd.http.deps import EngineDep

router = APIRouter(prefix="/api/memory/import", tags=["memory"])

#: The largest OmniRoute database accepted in one upload.
MAX_UPLOAD_BYTES = 512 * 1024 * 1024
OMNIROUTE_PATH = f"{router.prefix}/omniroute"
MEM0_PATH = f"{router.prefix}/mem0"


UPLOADS = "uploads"


def clear_uploads(data_dir: Path | None) -> None:
    """Remove the uploads a killed process left (zeroed first: they held memories)."""
    if data_dir is None:
        return
    for stale in (data_dir / UPLOADS).glob(".omniroute-upload-*"):
        _shred(stale)


def _shred(path: Path) -> None:
    try:
        size = path.stat().st_size
        with path.open("r+b") as out:
            for _ in range(0, size, 1 << 20):
                out.write(bytes(min(1 << 20, size - out.tell())))
    except OSError:
        pass
    path.unlink(missing_ok=True)


@router.post("/omniroute")
async def import_omniroute(
    request: Request,
    engine: EngineDep,
    map: Annotated[list[str] | None, Query(description="OLD=KEY, repeatable")] = None,
    dryRun: bool = False,
    settings: Annotated[bool, Query(description="take the file's memory settings")] = True,
) -> dict[str, Any]:
    """Memories, keys and memory settings from an OmniRoute database (the body)."""
    from memoryd.engine.importers import from_omniroute, parse_mapping
    from memoryd.storage.sqlite.foreign import read_omniroute

    mapping = parse_mapping(map or [])
    folder = Path(engine.config.data_dir) / UPLOADS if engine.config.data_dir else None
    if folder is not None:
        folder.mkdir(mode=0o700, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".omniroute-upload-", suffix=".db", dir=folder)
    path = Path(name)
    try:
        size = 0
        with os.fdopen(fd, "wb") as out:
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_UPLOAD_BYTES:
                    raise PayloadTooLargeError(f"database larger than {MAX_UPLOAD_BYTES} bytes")
                out.write(chunk)
        if size == 0:
            raise ValidationError("send the OmniRoute database file as the request body")

        def run() -> dict[str, Any]:
            dump = read_omniroute(path, label="the uploaded file", live=False)
            report = from_omniroute(engine, dump, mapping, dry_run=dryRun, settings=settings)
            return report.to_dict()

        return await run_in_threadpool(run)
    finally:
        for done in (path, *(Path(f"{path}{x}") for x in ("-wal", "-shm", "-journal"))):
            await run_in_threadpool(_shred, done)


@router.post("/mem0")
async def import_mem0(
    request: Request,
    engine: EngineDep,
    apiKeyId: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    dryRun: bool = False,
) -> dict[str, Any]:
    """A mem0 export (``get_all``'s JSON: ``{"results": [...]}`` or a list) under one
    key (default: a key named mem0); each ``user_id`` becomes an end user of it."""
    from memoryd.engine.importers import from_mem0

    raw = await request.body()

    def run() -> dict[str, Any]:
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise ValidationError("request body is not valid JSON") from None
        if value_too_deep(data) is not None:
            raise ValidationError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        return from_mem0(engine, data, apiKeyId, dry_run=dryRun).to_dict()

    return await run_in_threadpool(run)

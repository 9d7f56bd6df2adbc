"""``/api/memory/import/{omniroute,mem0}``: moving in from another memory system over
REST (issue 41), as ``memoryd import omniroute|mem0`` does locally.

The OmniRoute database is the request body (``application/octet-stream``, a SQLite
file); it is written to a private file in the data dir for the read, deleted after,
and the store scrubbed (the file held memories). A mem0 export is a JSON body.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query, Request
from starlette.concurrency import run_in_threadpool

from memoryd.api.deps import EngineDep
from memoryd.errors import PayloadTooLargeError, ValidationError

router = APIRouter(prefix="/api/memory/import", tags=["memory"])

#: The largest OmniRoute database accepted in one upload.
MAX_UPLOAD_BYTES = 512 * 1024 * 1024
OMNIROUTE_PATH = f"{router.prefix}/omniroute"
MEM0_PATH = f"{router.prefix}/mem0"


def _mapping(pairs: list[str]) -> dict[str, str]:
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


@router.post("/omniroute")
async def import_omniroute(
    request: Request,
    engine: EngineDep,
    map: Annotated[list[str] | None, Query(description="OLD=KEY, repeatable")] = None,
    dryRun: bool = False,
) -> dict[str, Any]:
    """Memories, keys and memory settings from an OmniRoute database (the body)."""
    from memoryd.engine.importers import from_omniroute
    from memoryd.storage.sqlite.foreign import read_omniroute

    mapping = _mapping(map or [])
    folder = Path(engine.config.data_dir) if engine.config.data_dir else None
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
            dump = read_omniroute(path, label="the uploaded file")
            return from_omniroute(engine, dump, mapping, dry_run=dryRun).to_dict()

        return await run_in_threadpool(run)
    finally:
        path.unlink(missing_ok=True)
        for extra in ("-wal", "-shm", "-journal"):
            Path(f"{path}{extra}").unlink(missing_ok=True)


@router.post("/mem0")
def import_mem0(
    body: Annotated[Any, Body(description="mem0's get_all JSON: {results: [...]} or a list")],
    engine: EngineDep,
    apiKeyId: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    dryRun: bool = False,
) -> dict[str, Any]:
    """A mem0 export (``get_all``'s JSON) under one key (default: a key named mem0);
    each ``user_id`` becomes an end user of it."""
    from memoryd.engine.importers import from_mem0

    return from_mem0(engine, body, apiKeyId, dry_run=dryRun).to_dict()

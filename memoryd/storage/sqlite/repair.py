"""Start-up consistency checks: the indexes must agree with ``memories``.

SQLite's atomic commit keeps each transaction whole across a crash, and the FTS and
vector rows are written by triggers in the same transactions as the memories, so
they should never disagree. This is the belt to that pair of braces: a damaged FTS
index is rebuilt from ``memories``, vectors whose memory is gone are dropped, and a
memory marked indexed but without a vector is queued again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import apsw

from memoryd.storage.sqlite import vectors as vec_sql
from memoryd.storage.sqlite.database import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RepairReport:
    fts_rebuilt: bool
    orphan_vectors: int
    requeued: int

    @property
    def changed(self) -> bool:
        return self.fts_rebuilt or bool(self.orphan_vectors or self.requeued)


def _fts_ok(conn: Any) -> bool:
    try:
        conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    except apsw.Error:
        return False
    return True


def repair(db: Database) -> RepairReport:
    def apply(conn: Any) -> RepairReport:
        rebuilt = False
        if db.capabilities.fts5 and not _fts_ok(conn):
            conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
            rebuilt = True
        orphans = 0
        for table in vec_sql.TABLES.values():
            if vec_sql.table_named(conn, table):
                conn.execute(f"DELETE FROM {table} WHERE seq NOT IN (SELECT seq FROM memories)")
                orphans += conn.changes()
        conn.execute(
            "UPDATE memories SET needs_reindex = 1 WHERE needs_reindex = 0 "
            "AND seq NOT IN (SELECT seq FROM vec_memories)"
        )
        return RepairReport(rebuilt, orphans, conn.changes())

    report: RepairReport = db.write(apply)
    if report.changed:
        log.warning("start-up repair: %s", report)
    return report

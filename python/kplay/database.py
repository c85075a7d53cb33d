"""The kernel database from Python: the same file as `kplay db` ($KPLAY_DB, else the cache dir).

Every helper takes db="" for the default path, or a file path. Records are the JSON forms of
`kplay db export` (docs/design.md): tunings with every candidate, and devices. As with `kplay db`,
a file that is not a kplay database raises InvalidArgumentError and is left as it is, and the
helpers that only read (db_stats, db_export, db_tunings) create, write and move nothing.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List

from . import _core
from ._arguments import text


def db_path(db: str = "") -> str:
    """The database file the helpers (and kplay's launches) use."""
    return _core.db_path(text(db, "db"))


def db_stats(db: str = "") -> Dict[str, Any]:
    """{'path', 'persistent', 'binaries', 'binary_bytes', 'tunings', 'devices'}."""
    return dict(_core.db_stats(text(db, "db")))


def db_export(db: str = "") -> Dict[str, Any]:
    """The export document (format 'kplay-tuning'): {'format', 'version', 'devices', 'tunings'}."""
    return json.loads(_core.db_export(text(db, "db")))


def db_tunings(db: str = "") -> List[Dict[str, Any]]:
    """Every tuning record, candidates included."""
    return list(db_export(db).get("tunings", []))


def db_import(document: Any, db: str = "") -> int:
    """Imports an export document (a dict, or its JSON text); returns the records imported."""
    doc = document if isinstance(document, str) else json.dumps(document)
    return int(_core.db_import(text(db, "db"), text(doc, "document")))


def db_clear(db: str = "") -> None:
    """Removes every binary, tuning and device record."""
    _core.db_clear(text(db, "db"))

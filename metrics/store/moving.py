"""Moving a bench between its data folder and Postgres (`bench store import` / `export`, docs/replicas.md).

`into` copies each log the store keeps (`LOGS`: the offload, calls, route and change logs, and the usage ledger's
months, `metrics/usage/<YYYY-MM>.jsonl`) and each document that outlives a run (`DOCUMENTS`: the gateway keys, the
configuration the dashboard edits, the learned limits and the alerts) from the folder's files into Postgres,
replacing what the database held under that name; `out` writes them back as the folder's files. Every non-blank
line is copied as its bytes, in order, a torn or corrupt one too (it is the record as it was); a rotated log
(`calls.jsonl.3` … `.1`) goes in before the live file, oldest first, and comes back as one file.
"""

import os
from collections.abc import Iterator
from pathlib import Path

from ..core import fileio
from .logs import DOCUMENTS, LOGS, USAGE, Log
from .store import Shared

DOCUMENT = "the document"


def _rotated(path: Path) -> list[Path]:
    """`path`'s rotated copies, oldest first."""
    found = []
    number = 1
    while path.with_name(f"{path.name}.{number}").exists():
        found.append(path.with_name(f"{path.name}.{number}"))
        number += 1
    return found[::-1]


def _lines(files: list[Path]) -> Iterator[bytes]:
    for path in files:
        with open(path, "rb") as f:
            for line in f:
                line = line.rstrip(b"\n")
                if line.strip():
                    yield line


def _months(folder: Path) -> list[Log]:
    return [(*USAGE, path.name) for path in sorted(folder.joinpath(*USAGE).glob("*.jsonl"))]


def into(shared: Shared, folder: Path) -> dict[str, str]:
    """Each log and document of `folder` into `shared`, replacing it there; `{name: what moved}`."""
    counts = {}
    for log in (*LOGS, *_months(folder)):
        path = folder.joinpath(*log)
        files = [*_rotated(path), *([path] if path.exists() else [])]
        counts["/".join(log)] = f"{shared.replace(log, _lines(files)):,} lines"
    for place in DOCUMENTS:
        path = folder.joinpath(*place)
        if path.exists():
            shared.write_text(place, path.read_text(encoding="utf-8"))
            counts["/".join(place)] = DOCUMENT
    return counts


def _write(path: Path, chunks: Iterator[bytes]) -> int:
    """`chunks` as `path`, whole or not at all (a temporary replaced in one step); returns how many. Written
    here, not by `fileio`, which would send a configuration document back to the shared store."""
    fileio.make_folder(path.parent)
    temp = path.with_name(f".{path.name}.export")
    count = 0
    with open(temp, "wb", opener=fileio.opener) as out:  # the owner's alone (0600), as every file of the folder
        for chunk in chunks:
            out.write(chunk)
            count += 1
    os.replace(temp, path)
    return count


def out(shared: Shared, folder: Path) -> dict[str, str]:
    """Each log and document of `shared` as `folder`'s files (rotated copies removed: their lines are in the file
    now); `{name: what moved}`."""
    counts = {}
    for log in (*LOGS, *(found for found in shared.logs() if found[:len(USAGE)] == USAGE)):
        path = folder.joinpath(*log)
        count = _write(path, (line + b"\n" for line in shared.lines(log)))
        counts["/".join(log)] = f"{count:,} lines"
        for older in _rotated(path):
            older.unlink()
    for place in DOCUMENTS:
        text = shared.read_text(place)
        if text is not None:
            _write(folder.joinpath(*place), iter([text.encode("utf-8")]))
            counts["/".join(place)] = DOCUMENT
    return counts



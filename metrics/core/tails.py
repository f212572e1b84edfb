"""The last lines of a log, read from its end (dashboard.md IMP-12).

The dashboard's Gateway card, route conversations, verdict dialog and Logs page each want the newest
few lines of a log that only grows (calls.jsonl, routes.jsonl, changes.jsonl). Reading the whole file
per request would make the card's cost grow with the log; reading blocks backwards from the end keeps
it proportional to what is shown.
"""

import itertools
import json
import os
from collections.abc import Iterator
from typing import Any

BLOCK = 1 << 16


def backwards(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """Each line of `path` (bytes, without its newline), newest first; nothing when the file is missing."""
    try:
        f = open(path, "rb")
    except OSError:
        return
    with f:
        end = f.seek(0, os.SEEK_END)
        rest = b""
        while end > 0:
            start = max(0, end - BLOCK)
            f.seek(start)
            chunk = f.read(end - start) + rest
            end = start
            lines = chunk.split(b"\n")
            rest = lines.pop(0)  # may continue in the block before
            for line in reversed(lines):
                if line.strip():
                    yield line
        if rest.strip():
            yield rest


def each(path: str | os.PathLike[str], wanted: bytes | None = None) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, newest first; unparsable lines skipped.

    `wanted` (bytes) skips lines not containing it before parsing them (a cheap filter by id).
    """
    for line in backwards(path):
        if wanted is not None and wanted not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def records(path: str | os.PathLike[str], limit: int) -> list[dict[str, Any]]:
    """Up to `limit` JSON objects from the end of a JSONL file, newest first."""
    return list(itertools.islice(each(path), limit))

"""Caps counted across processes in the data folder: the folder store's `charge` (per minute, RATE-1..4) and
`count_day` (per day: a key's verdicts, issue 29 item 3).

The window of each name lives in `<data>/runs/gateway/rate.json` under a file lock: `{name: [times]}`, wall
clock seconds, since the file outlives processes and boots. A time ahead of now (the clock stepped back) is
dropped. When the file stays locked for `LOCK_WAIT` seconds, or cannot be written, the request is counted in
this process alone rather than refused or left uncounted.
"""

import json
import math
import threading
import time
from typing import Any

from ..core import fileio, paths

WINDOW = 60
LOCK_WAIT = 5
RATES = ("runs", "gateway", "rate.json")
DAILY = ("runs", "gateway", "verdicts.json")  # `{"day": the local date, "keys": {name: count}}`, today's only

_memory: dict[str, list[float]] = {}
_memory_lock = threading.Lock()


def window(stamps: list[Any], cap: int, now: float) -> tuple[int | None, list[float]]:
    """RATE-3/4 on one name's times: `(seconds to wait or None, times to keep)`."""
    kept = [t for t in stamps if isinstance(t, (int, float)) and now - WINDOW < t <= now]
    if len(kept) >= cap:
        return math.floor(min(kept) + WINDOW - now) + 1, kept
    return None, kept + [now]


def charge(name: str, cap: int) -> int | None:
    """Count one request of `name` against `cap` across every process; seconds to wait when over it."""
    target = paths.file(*RATES)
    try:
        with fileio.lock(target, timeout=LOCK_WAIT):
            now = time.time()
            data = fileio.read_json(target, comments=False)
            wait, kept = window(data.get(name) or [], cap, now)
            # other names' windows stay only while they hold a time inside the last minute
            fresh = {other: stamps for other, stamps in data.items() if other != name and isinstance(stamps, list)
                     and any(isinstance(t, (int, float)) and t > now - WINDOW for t in stamps)}
            fresh[name] = kept
            fileio.write_atomic(target, json.dumps(fresh) + "\n")
            return wait
    except (OSError, TimeoutError):
        with _memory_lock:
            wait, _memory[name] = window(_memory.get(name, []), cap, time.time())
            return wait


def count_day(name: str, day: str, cap: int) -> bool:
    """Count one of `name`'s `cap` a day on `day` across every process; False (nothing counted) when spent."""
    target = paths.file(*DAILY)
    with fileio.lock(target):
        data = fileio.read_json(target, comments=False)
        counts: dict[str, Any] = data["keys"] if data.get("day") == day and isinstance(data.get("keys"), dict) else {}
        done = counts.get(name, 0) if isinstance(counts.get(name), int) else 0
        if done >= cap:
            return False
        fileio.write_atomic(target, json.dumps({"day": day, "keys": {**counts, name: done + 1}}) + "\n")
        return True

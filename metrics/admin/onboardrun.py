"""Runs one onboarding and writes its exit line itself (dashboard.md OB-17, IMP-7).

    python -m benchwarmers.admin.onboardrun LOG COMMAND...

The dashboard starts this instead of `scripts/onboard.py` directly: the command's output goes to LOG and,
when it exits, `__ONBOARD_EXIT__ <code>` is appended by this process, not by the server. A dashboard
stopped or restarted mid-run therefore no longer leaves a log without its exit line (the page would never
see `done`); the restarted server reads the line and the queue carries on.

On a shared store (Postgres, docs/replicas.md) the log is also copied into the store as it grows, whole, with a
beat counted up at least every BEAT_S: a replica on another machine follows the run from the copy (the page's
log, the queue's outcome) and knows the run is alive while the beat moves. The file stays the log on this
machine, written by the command itself as before.
"""

import subprocess
import sys
import time
from pathlib import Path

from ..core import fileio
from ..store import store

EXIT_MARK = "__ONBOARD_EXIT__"
COPY_S = 0.5  # how often the copy is brought up to date: the page on another replica follows the run this closely
BEAT_S = 2.0  # the copy is written at least this often, even while the command is silent, so its beat shows life
LAST_TRIES = 60  # the copy with the exit line is tried this many times, COPY_S apart, while the store is away


class Copy:
    """The log's copy in a shared store: `{"text": the whole log, "beat": n}` under its name (`store.ONBOARD_LOGS`)."""

    def __init__(self, shared: store.Store, log: Path) -> None:
        self.shared, self.log = shared, log
        self.beat = 0
        self.sent: str | None = None
        self.at = 0.0

    def sync(self) -> bool:
        """Write the log's text when it changed, or when the last beat is BEAT_S old; whether the copy is up to
        date. A store away is tried again at the next sync: the file is the log, the copy only follows it."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:  # the file gone or unreadable: the run goes on, and so does the copy's last text
            return False
        if text == self.sent and time.monotonic() - self.at < BEAT_S:
            return True
        self.beat += 1
        record = {"text": text, "beat": self.beat}
        try:
            self.shared.change(store.ONBOARD_LOGS, self.log.name, lambda _old: (None, record))
        except OSError:
            return False
        self.sent, self.at = text, time.monotonic()
        return True

    def last(self) -> None:
        """The copy with the exit line, which the replica settling the run waits for: tried again for a while
        when the store is away."""
        for _ in range(LAST_TRIES):
            if self.sync():
                return
            time.sleep(COPY_S)

    def follow(self, process: "subprocess.Popen[bytes]") -> int:
        """Wait for `process`, copying the log meanwhile; its exit code."""
        while True:
            try:
                return process.wait(timeout=COPY_S)
            except subprocess.TimeoutExpired:
                self.sync()


def copy_of(log: Path) -> Copy | None:
    """The log's copy when the store is shared; None on the folder, where every dashboard reads the file."""
    try:
        shared = store.current()
    except OSError:  # the store cannot be opened: the run goes on, its log only here
        return None
    return Copy(shared, log) if shared.kind != "folder" else None


def run(log: str, command: list[str]) -> int:
    """Run `command` with its output appended to `log`, then append the exit line; the exit code."""
    path = Path(log)
    with open(path, "ab", opener=fileio.opener) as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    copy = copy_of(path)
    code = copy.follow(process) if copy else process.wait()
    with open(path, "a", encoding="utf-8", opener=fileio.opener) as out:
        out.write(f"\n{EXIT_MARK} {code}\n")
    if copy:
        copy.last()
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print("usage: python -m benchwarmers.admin.onboardrun LOG COMMAND...", file=sys.stderr)
        return 2
    return run(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())

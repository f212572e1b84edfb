"""Runs one onboarding and writes its exit line itself (dashboard.md OB-17, IMP-7).

    python -m benchwarmers.admin.onboardrun LOG COMMAND...

The dashboard starts this instead of `scripts/onboard.py` directly: the command's output goes to LOG and,
when it exits, `__ONBOARD_EXIT__ <code>` is appended by this process, not by the server. A dashboard
stopped or restarted mid-run therefore no longer leaves a log without its exit line (the page would never
see `done`); the restarted server reads the line and the queue carries on.
"""

import subprocess
import sys

from ..core import fileio

EXIT_MARK = "__ONBOARD_EXIT__"


def run(log, command):
    """Run `command` with its output appended to `log`, then append the exit line; the exit code."""
    with open(log, "ab", opener=fileio.opener) as out:
        code = subprocess.call(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    with open(log, "a", encoding="utf-8", opener=fileio.opener) as out:
        out.write(f"\n{EXIT_MARK} {code}\n")
    return code


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2:
        print("usage: python -m benchwarmers.admin.onboardrun LOG COMMAND...", file=sys.stderr)
        return 2
    return run(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())

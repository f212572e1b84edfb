"""Retire what is clearly gone, and only that (suite-cli-mcp.md §3.5, AR-1..7).

    python -m benchwarmers.scripts.auto_retire [--dry-run]

Runs auto-retire (`metrics/admin/retire.py`, where the rules and their decisions are written) on the last listing
check's evidence: `config/served-snapshot.json`'s keys seen on its `updated` day are the live set, so no
endpoint is listed. `--dry-run` says what it would do, calls no model and writes nothing. The daily
`scripts/check_deprecations.py` runs the same after reading every endpoint's listing.
"""

import sys

from ..admin import retire


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--dry-run"]):
        print("usage: python -m benchwarmers.scripts.auto_retire [--dry-run]", file=sys.stderr)
        return 2
    dry_run = argv == ["--dry-run"]
    lines, _ = retire.run(dry_run=dry_run)
    print(f"AUTO-RETIRE{' (dry run)' if dry_run else ''}:" if lines else "auto-retire: nothing to do")
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

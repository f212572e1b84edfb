"""The installed commands `benchwarmers` and `bench` (LN).

An installed package never keeps data beside its code: the launcher always sets
`BENCHWARMERS_HOME` for what it runs (the environment's value, else the per-user
folder, PATH-3).
"""

import argparse
import os
import sys

from metrics import __version__, paths


def parser():
    p = argparse.ArgumentParser(
        prog="benchwarmers",
        description="Benchwarmers: a self-hosted panel gateway for LLMs.",
    )
    p.add_argument("--version", action="version", version=f"benchwarmers {__version__}")
    p.add_argument("command", nargs="?", choices=["paths"], help="paths: print the data folder and why")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    if not os.environ.get("BENCHWARMERS_HOME", "").strip():
        os.environ["BENCHWARMERS_HOME"] = str(paths.default_home())
    if args.command == "paths":
        paths.main()
        return 0
    parser().print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())

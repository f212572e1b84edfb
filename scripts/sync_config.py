"""Keep llm's copy of the registrations in step with the data folder's (REG-9, SY-1..3).

    python -m benchwarmers.scripts.sync_config            DATA -> llm's user folder, then push model options
    python -m benchwarmers.scripts.sync_config --pull     llm's user folder -> DATA
    python -m benchwarmers.scripts.sync_config --check    print `identical` or `DIFFERENT`; exit 0 or 1; change nothing

The data folder's `config/extra-openai-models.yaml` is canonical; the copy in llm's
user folder is what `llm -m <alias>` reads. Options are pushed in one atomic write of
llm's `model_options.json` (see `registry.push_options`).
"""

import argparse
import sys

from ..core import console
from ..models import registry


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.scripts.sync_config",
                                     description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--pull", action="store_true", help="copy llm's registrations back into the data folder")
    which.add_argument("--check", action="store_true", help="say whether the two copies are identical")
    args = parser.parse_args(argv)
    source, live = registry.path(), registry.llm_path()
    if args.check:
        if not source.exists():
            print(f"DIFFERENT: {source} does not exist: no model is registered yet; "
                  "register one with `python -m benchwarmers.scripts.onboard SERVED_NAME` (it syncs llm's copy too)")
            return 1
        if not live.exists():
            print(f"DIFFERENT: {live} does not exist\n  {source}\n"
                  "Run `python -m benchwarmers.scripts.sync_config` to copy the registrations to llm.")
            return 1
        same = registry.in_sync()
        print(("identical" if same else "DIFFERENT") + f"\n  {source}\n  {live}")
        if not same:
            print("Run `python -m benchwarmers.scripts.sync_config` to copy the data folder's registrations to llm "
                  "(or --pull to keep llm's).")
        return 0 if same else 1
    try:
        print(registry.pull_from_llm() if args.pull else registry.sync_to_llm())
    except FileNotFoundError as exc:
        console.say(exc)
        return 1
    if not args.pull:
        print(f"{registry.push_options()} model option(s) pushed to llm")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Every check in one command (suite-cli-mcp.md §3.3, CK-1, CK-2).

    python -m benchwarmers.scripts.check [--quick] [--fixtures] [NAME...]

Each test file of `tests/` is one check, run by pytest in its own process (a crash cannot take the
others down), from the checkout, with a 900 s cap. `--quick` skips the slow ones (the real `llm`
CLI against the local upstream). `--fixtures` runs every check on a copy of `tests/fixtures/data`
in a temporary folder, with an empty llm user folder: how CI runs on a clean machine. No check
calls a model, reaches past 127.0.0.1, or writes the real data folder (each test makes its own).

Decisions where the contract is silent:
- The modules have no `--selftest`: their self-checks are tests (docs/decisions.md), so the test
  files are the checks, one process each.
- NAME... (a test file's stem, `test_layers`) runs only those checks: a quick way to re-run the one
  that failed. A name the checkout does not have is listed as skipped, not failed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..core import paths

CODE = paths.CODE  # the checkout: the checks are its tests
TESTS = CODE / "tests"
FIXTURES = TESTS / "fixtures" / "data"
CAP = 900
TAIL = 40
SLOW = {"test_llm_backend": "the real llm CLI", "test_clients": "the real llm CLI"}


def checks(names):
    """`[(name, path or None)]`: every test file, or the ones named (None for a name not in the checkout)."""
    found = {path.stem: path for path in sorted(TESTS.glob("test_*.py"))}
    if not names:
        return list(found.items())
    return [(name, found.get(name)) for name in names]


def run(path, env):
    """`(passed, seconds, output)` of one check in its own process."""
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-q", "-o", "addopts=", "-p", "no:cacheprovider", str(path)]
    try:
        done = subprocess.run(command, cwd=CODE, env=env, capture_output=True, text=True, timeout=CAP)
        passed, output = done.returncode == 0, done.stdout + done.stderr
    except subprocess.TimeoutExpired:
        passed, output = False, f"no result in {CAP} s"
    return passed, time.monotonic() - started, output


def environment(fixtures, scratch):
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    if fixtures:
        data, llm = Path(scratch) / "data", Path(scratch) / "llm"
        shutil.copytree(FIXTURES, data)
        llm.mkdir()
        env.update(BENCHWARMERS_HOME=str(data), LLM_USER_PATH=str(llm))
    return env


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.scripts.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the slow checks (" + ", ".join(SLOW) + ")")
    parser.add_argument("--fixtures", action="store_true",
                        help="run on a copy of tests/fixtures/data and an empty llm folder (a clean machine)")
    parser.add_argument("names", nargs="*", metavar="NAME", help="run only these checks (test file stems)")
    args = parser.parse_args(argv)
    if not TESTS.is_dir():  # an installed package carries no tests: "all checks pass" would be a check of nothing
        print(f"no checks here: they are a checkout's tests/, and {CODE} is an installed package", file=sys.stderr)
        return 1
    failed = []
    with tempfile.TemporaryDirectory(prefix="bench-check-") as scratch:
        env = environment(args.fixtures, scratch)
        for name, path in checks(args.names):
            if path is None:
                print(f"skip  {name}  (not in this checkout)", flush=True)
                continue
            if args.quick and name in SLOW:
                print(f"skip  {name}  (--quick: {SLOW[name]})", flush=True)
                continue
            passed, seconds, output = run(path, env)
            print(f"{'ok  ' if passed else 'FAIL'} {name}  ({seconds:.0f}s)", flush=True)
            if not passed:
                failed.append(name)
                for line in output.rstrip().splitlines()[-TAIL:]:
                    print(f"      {line}")
    print(f"{len(failed)} failed: {', '.join(failed)}" if failed else "all checks pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Make a data folder, and optionally its first endpoint (suite-cli-mcp.md §3.1, IN-1..6).

    python -m benchwarmers.scripts.init [folder] [--endpoint NAME BASE_URL] [--key]

The folder (default: the per-user one, DATA-4) gets the shipped defaults, never over a file that is
there, and the layout; the checkout's pointer file `.benchwarmers-home` is set to it when nothing
else names a data folder. `--endpoint` adds a first endpoint only if `BASE_URL/models` answers;
`--key` asks for its API key without echoing it and keeps it in llm's key store under NAME. A key is
never taken on the command line (it would sit in the shell's history and the process list) and never
written to the data folder.

Decisions where the contract is silent:
- The key prompt reads the terminal through `getpass`; with no terminal (a script piping the key in)
  getpass reads stdin, still without echoing anything back.
- Without a folder argument, a set BENCHWARMERS_HOME names the folder before DATA-4's default does: whoever
  set it means that folder, and every later command (onboard, the gateway) will read it.
- The last line names the next step on the command line (onboarding a served model) before the
  dashboard, so a reader without a browser at hand is not sent to one. It says the dashboard starts now only
  on the launcher's first run (`bench serve` making the folder, which then starts it), not for `bench init`.
- No pointer file is written by an installed package (it would sit among the installed code, DATA-4, and go
  with the next upgrade) nor under the launcher (`bench` reads none, LN-7): the second line then says to set
  BENCHWARMERS_HOME, unless the folder is the per-user default. A BENCHWARMERS_HOME the launcher filled in
  with that default names nothing the person chose.
"""

import argparse
import getpass
import os
import sys
from pathlib import Path

NEXT_ONBOARD = "python -m benchwarmers.scripts.onboard SERVED_NAME"


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.scripts.init",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?",
                        help="the data folder (default: BENCHWARMERS_HOME when set, else the per-user folder)")
    parser.add_argument("--endpoint", nargs=2, metavar=("NAME", "BASE_URL"),
                        help="add a first endpoint, only if BASE_URL/models answers")
    parser.add_argument("--key", action="store_true",
                        help="ask for the endpoint's API key (not echoed) and keep it in llm's key store")
    args = parser.parse_args(argv)
    if args.key and not args.endpoint:
        parser.error("--key goes with --endpoint")
    return args


def pointer_line(folder, env, paths, fileio):
    """IN-3: what the second line says, writing the pointer file only when nothing else names a folder.
    `env` is BENCHWARMERS_HOME as it was before this process set it."""
    from ..core import settings

    if env:
        if Path(os.path.expanduser(env)).resolve() == folder:
            return "BENCHWARMERS_HOME already names it."
        return (f"BENCHWARMERS_HOME names {env}, which wins: set it to {folder} (or unset it) "
                "for the bench to use this folder.")
    if folder == paths.CODE:
        return "The checkout is its own data folder; no pointer needed."
    if settings.env("BENCHWARMERS_LAUNCHER") or not paths.IN_CHECKOUT:
        if folder == paths.default_home().resolve():
            return "This is the default folder for this user: the bench uses it when BENCHWARMERS_HOME is not set."
        return f"Set BENCHWARMERS_HOME={folder} for the bench to use this folder."
    try:
        pointed = paths.POINTER.read_text(encoding="utf-8").strip()
    except OSError:
        pointed = ""
    if pointed and Path(os.path.expanduser(pointed)).resolve() == folder:
        return f"The checkout already points at it ({paths.REASON_POINTER})."
    if pointed:
        return (f"{paths.POINTER} names {pointed}, left so: to use this folder instead, write its path there "
                f"or set BENCHWARMERS_HOME={folder}.")
    fileio.write_atomic(paths.POINTER, f"{folder}\n")
    return f"Wrote {paths.POINTER}: the bench uses this folder from now on."


def add_endpoint(folder, name, base, ask_key):
    """IN-4: `(ok, line)`; the key asked here goes to the key store only once the listing answered."""
    from ..core import keys, paths
    from ..core.errors import Refusal
    from ..models import endpoints

    if paths.located()[0].resolve() != folder:
        return False, f"Endpoint not added: this process already uses {paths.located()[0]}."
    secret = getpass.getpass(f"API key for {name}: ").strip() if ask_key else keys.key(name.strip().lower())
    try:
        result = endpoints.add(name, base, secret, who="init")
    except Refusal as exc:  # its rules, or an endpoints.json that cannot be read (`Unusable`)
        return False, f"Endpoint not added: {'; '.join(exc.messages)}. Add it from the dashboard instead."
    stored = " Its key is in llm's key store (`llm keys` lists it)." if secret else " No key is stored for it."
    note = f" {result['note']}" if result["note"] else ""
    return True, f"Endpoint {name.strip().lower()} added: it lists {result['served']} model(s).{stored}{note}"


def next_step(added, paths):
    """IN-6: the next thing to do, and where the dashboard is."""
    from ..core import settings
    port = settings.env("BENCH_PORT").strip()
    url = f"http://localhost:{port}"
    if settings.env("BENCHWARMERS_FIRST_RUN") == "1":
        return f"Next: the dashboard starts now at {url}; onboard a model there."
    first = f"onboard a model it serves: {NEXT_ONBOARD} (`python -m benchwarmers.models.endpoints` lists what it serves)" \
        if added else "add an endpoint: python -m benchwarmers.scripts.init --endpoint NAME BASE_URL --key"
    return f"Next: {first}; or run the dashboard (bench serve) and open {url}."


def main(argv=None):
    args = parse(argv)
    from ..core import fileio, paths, settings
    from ..suite import tasks as suite_tasks

    env = "" if settings.env("BENCHWARMERS_HOME_DEFAULTED") == "1" else settings.env("BENCHWARMERS_HOME").strip()
    chosen = args.folder or env
    folder = Path(os.path.expanduser(chosen)).resolve() if chosen else paths.default_home().resolve()
    os.environ["BENCHWARMERS_HOME"] = str(folder)  # IN-1: before anything reads DATA
    paths.reload()
    told = pointer_line(folder, env, paths, fileio)
    copied = paths.make(folder) + suite_tasks.copy_starter(folder)  # IN-2, ST-3: the starter tasks too
    print(f"Data folder: {folder} ({copied} starter file(s) copied, nothing overwritten).")
    print(told)
    added, status = False, 0
    if args.endpoint:
        added, line = add_endpoint(folder, *args.endpoint, args.key)
        print(line)
        status = 0 if added else 1
    print(next_step(added, paths))
    return status


if __name__ == "__main__":
    sys.exit(main())

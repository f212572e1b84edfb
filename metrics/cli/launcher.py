"""The installed commands `benchwarmers` and `bench`: one front door (suite-cli-mcp.md §10, LN-1..10).

`plan(argv)` decides, without side effects, what a command line means: something to say, or a child
to run (a server, the MCP server, or the CLI) with its arguments and folder. `main()` carries the plan
out: the data folder on a server's first run, the child's environment, and the child's exit code.
Children run as `python -m <module>` with this interpreter, so a checkout and an install behave alike.

An installed package never keeps data beside its code: the launcher always sets `BENCHWARMERS_HOME`
for what it runs (the environment's value, else the per-user folder, DATA-4).

Decisions where the spec is silent:
- `demo` runs the dashboard's demo (`python serve.py --demo`): the dashboard and the gateway on the demo
  bench, in one command; its data folder is thrown away, so it never counts as a first run.
- `paths` (where the data folder is, and why) and `completion bash|zsh` are the launcher's own.
- So is `settings` alone (or with `--list` or `--markdown`): every setting's effective value and where it came
  from, for the data folder the servers would use (`core.settings`); with an action (`settings gateway ...`) it
  is the CLI's, which changes them at a running server. `plan()` names it (`{"settings": "list"|"markdown"}`)
  and `main()` reads the folder's config files, so `plan()` still reads nothing.
"""

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from .. import __version__
from ..core import paths, settings
from . import cli, completion

PROGS = ("bench", "benchwarmers")


@dataclasses.dataclass(frozen=True)
class Server:
    module: str
    args: tuple
    summary: str
    first_run: bool


SERVERS = {
    "serve": Server("benchwarmers.dashboard.serve", (), "the dashboard and the gateway, http://127.0.0.1:8122", True),
    "demo": Server("benchwarmers.dashboard.serve", ("--demo",), "the same on a throwaway demo bench", False),
    "gateway": Server("benchwarmers.server.gateway", (), "the panel gateway alone, http://127.0.0.1:8123/v1", True),
    "mcp": Server("benchwarmers.server.mcp_server", (), "the MCP server on stdio, for coding agents", False),
    "init": Server("benchwarmers.scripts.init", (), "make a data folder: [folder] [--endpoint NAME URL --key]", False),
}
OWN = {"paths": "where the data folder is, and why", "completion": "print a bash or zsh completion script"}
OWN_SHOWN = [("paths | settings | completion", "data folder | each setting's source | bash|zsh completion")]
SETTINGS_OPTIONS = ("--list", "--markdown")  # `settings` with none of the CLI's actions
HELP = ("-h", "--help")


def client_commands():
    """`{name: parser}` of the CLI's commands (LN's client commands)."""
    sub = next(a for a in cli.parser()._actions if a.dest == "command")
    return dict(sub.choices)


def prog_name(env, argv0):
    """LN-4: `bench` or `benchwarmers` as typed (BENCHWARMERS_PROG, else argv[0]'s stem), else benchwarmers."""
    name = env.get("BENCHWARMERS_PROG") or Path(argv0 or "").stem
    return name if name in PROGS else "benchwarmers"


def home_of(env):
    """LN-7: BENCHWARMERS_HOME (`~` expanded) or the default folder for a new install (DATA-4)."""
    value = env.get("BENCHWARMERS_HOME", "").strip()
    return Path(value).expanduser() if value else paths.default_home()


def usage(prog, env):
    """LN-4: the launcher's usage, one screen."""
    servers = [(name, server.summary) for name, server in SERVERS.items()]
    commands = [*cli.COMMANDS, *OWN_SHOWN, ("--version", "print the version")]
    width = max(len(label) for label, _ in servers + commands) + 2

    def rows(pairs):
        return [f"  {prog} {label:<{width}}{summary}" for label, summary in pairs]

    home = str(paths.default_home()).replace(str(Path.home()), "~", 1)
    return "\n".join([
        f"{prog}: ask a panel of models, judge its answers, and run the servers.", "", "Servers:", *rows(servers), "",
        "Commands (clients of a running server; --json and --url URL on any):", *rows(commands), "",
        f"Data: BENCHWARMERS_HOME, else {home}.",
        "Ports: BENCH_PORT (dashboard), BENCH_GATEWAY_PORT (gateway). Commands: BENCHWARMERS_URL, _KEY, _TIMEOUT.",
        f"`{prog} <command> --help` shows its options and examples. Where another `bench` comes first on PATH,",
        "type `benchwarmers`."])


def completion_commands():
    """What the completion scripts offer: every command with its summary, options and actions (with theirs)."""
    commands = [(name, server.summary, ["--help"], {}) for name, server in SERVERS.items()]
    for name, parser in client_commands().items():
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        actions = {action: long_options(sub) for action, sub in groups[0].choices.items()} if groups else {}
        if name == "settings":  # the launcher's own list, beside the CLI's actions
            actions.update({option: [] for option in SETTINGS_OPTIONS})
        commands.append((name, parser.description, long_options(parser), actions))
    commands += [(name, summary, [], {}) for name, summary in OWN.items()]
    return commands


def long_options(parser):
    """A parser's long options, the hidden ones (each command's `--version`) left out."""
    return sorted({o for a in parser._actions if a.help != argparse.SUPPRESS
                   for o in a.option_strings if o.startswith("--")})


def plan(argv, env=None, cwd=None, argv0=None):
    """LN-1: `{"say", "code"[, "stderr": True]}` or `{"script", "args", "cwd", "first_run"}` for `argv`.

    `script` is the module the child runs with `python -m`. Pure: the environment, the current folder
    and argv[0] are read only from the arguments (the caller's own by default).
    """
    env = os.environ if env is None else env
    prog = prog_name(env, sys.argv[0] if argv0 is None else argv0)
    cwd = cwd or os.getcwd()
    if argv and argv[0] in ("--version", "-v"):
        return {"say": __version__, "code": 0}
    if argv[:1] == ["settings"] and set(argv[1:]) <= set(SETTINGS_OPTIONS):
        return {"settings": "markdown" if "--markdown" in argv else "list"}
    if cli_command(argv) in client_commands():
        return {"script": "benchwarmers.cli.cli", "args": list(argv), "cwd": cwd, "first_run": False}
    command = argv[0] if argv and argv[0] and not argv[0].startswith("-") else None
    if command is None:  # LN-3: the dashboard, with the whole argv
        argv = ["serve", *argv]
        command = "serve"
    if command not in SERVERS and command not in OWN:
        return unknown(prog, env, command)
    if command == "init":  # LN-6: its own arguments and its own --help
        return {"script": SERVERS["init"].module, "args": argv[1:], "cwd": cwd, "first_run": False}
    if any(arg in HELP for arg in argv):
        return {"say": usage(prog, env), "code": 0}
    if command == "completion":
        if argv[1:] and argv[1] in completion.SHELLS:
            return {"say": completion.script(argv[1], completion_commands()), "code": 0}
        return {"say": f"{prog}: give the shell: {prog} completion bash|zsh", "code": 2, "stderr": True}
    if command == "paths":
        return {"script": "benchwarmers.core.paths", "args": argv[1:], "cwd": cwd, "first_run": False}
    server = SERVERS[command]
    where = cwd if command == "mcp" else str(paths.CODE)
    return {"script": server.module, "args": [*server.args, *argv[1:]], "cwd": where, "first_run": server.first_run}


def cli_command(argv):
    """The command word past the CLI's global options, which may come first (`bench --json ask ...`, §9)."""
    i = 0
    while i < len(argv):
        if argv[i] == "--json" or argv[i].startswith("--url="):
            i += 1
        elif argv[i] == "--url":
            i += 2
        else:
            return argv[i]
    return None


def unknown(prog, env, command):
    """LN-5: on stderr, exit 2, nothing on stdout."""
    return {"say": f'{prog}: no command "{command}"\n\n{usage(prog, env)}', "code": 2, "stderr": True}


def settings_screen(kind, env):
    """`settings`: every setting's value and source for the folder the servers would use (`home_of`), or with
    `--markdown` the documented tables (docs/configuration.md)."""
    if kind == "markdown":
        return settings.markdown()
    home = home_of(env)
    why = paths.why(paths.REASON_ENV if env.get("BENCHWARMERS_HOME", "").strip() else paths.REASON_INSTALLED)
    return settings.screen(settings.effective(env, home), home, why)


def child_env(env, prog):
    """LN-7, and the program name the CLI's messages use. The children are this package's own modules, run
    with `-m` by the same interpreter: nothing is added to their import path, not even their cwd."""
    child = dict(env)
    child["BENCHWARMERS_HOME"] = str(home_of(env))
    child[paths.LAUNCHER_DEFAULT] = "0" if env.get("BENCHWARMERS_HOME", "").strip() else "1"  # `paths` says why
    child["PYTHONDONTWRITEBYTECODE"] = "1"  # the install folder may be read-only
    # A server's cwd is CODE, in an install the package folder itself: `-m` would put it first on the import path,
    # making its subpackages (core, config, cli ...) importable as top-level names, in the server and its children.
    child["PYTHONSAFEPATH"] = "1"
    child["PYTHONUTF8"] = "1"
    child["BENCHWARMERS_LAUNCHER"] = env.get("BENCHWARMERS_LAUNCHER") or "pip"
    child["BENCHWARMERS_PROG"] = prog
    return child


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    step = plan(argv)
    if "say" in step:
        print(step["say"], file=sys.stderr if step.get("stderr") else sys.stdout)
        return step["code"]
    if "settings" in step:
        print(settings_screen(step["settings"], os.environ))
        return 0
    env = child_env(os.environ, prog_name(os.environ, sys.argv[0]))
    home = Path(env["BENCHWARMERS_HOME"])
    if step["first_run"] and not home.exists():
        print(f"First run: making your data folder at {home}", flush=True)  # LN-8
        made = subprocess.run([sys.executable, "-m", SERVERS["init"].module, str(home)], cwd=paths.CODE,
                              env={**env, paths.FIRST_RUN: "1"}).returncode
        if made:
            return made
    child = subprocess.Popen([sys.executable, "-m", step["script"], *step["args"]], cwd=step["cwd"], env=env)
    while True:  # LN-9: Ctrl-C reaches the child too, which decides; the launcher waits for its exit code
        try:
            code = child.wait()
        except KeyboardInterrupt:
            continue
        return 128 - code if code < 0 else code  # a child a signal ended: the shell's 128 + signal


if __name__ == "__main__":
    sys.exit(main())

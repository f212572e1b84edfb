"""One table of settings (issue 28 item 5, `benchwarmers.core.settings`): every environment variable the code
names is declared there and read through `settings.env`; the documentation's settings tables
(docs/configuration.md, "Settings") are the ones the table makes; the config files' owners fall back to the
table's defaults; and `bench settings` shows each setting's effective value and where it came from, secrets
masked.

The rules on the source read it with `ast`, never importing it, as tests/test_layers.py does.
"""

import ast
import dataclasses
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchwarmers.admin import jobs
from benchwarmers.calling import client
from benchwarmers.cli import completion, launcher
from benchwarmers.core import paths, settings, themes
from benchwarmers.models import connections, registry
from benchwarmers.panel import collections, policy
from benchwarmers.providers import providers
from benchwarmers.suite import tasks

ROOT = Path(__file__).resolve().parent.parent
SCANNED = {"metrics": "benchwarmers", "suite": "benchwarmers.suite", "scripts": "benchwarmers.scripts",
           "perf": "benchwarmers.perf"}
# a name the product gives a variable: BENCH_PORT, BENCHWARMERS_KEY_MY_HUB, and a family's prefix BENCHWARMERS_KEY_
NAMED = re.compile(r"\bBENCH(?:WARMERS)?_[A-Z0-9_]*")
SETTINGS_PAGE = ROOT / "docs" / "configuration.md"
PAGE_TABLE = re.compile(r"<!-- settings: bench settings --markdown -->\n\n(.*?)\n\n<!-- end of settings -->", re.S)
FAMILIES = [s.family for s in settings.SETTINGS if s.family]


@functools.cache
def modules():
    """`{module: (path, tree)}` of the product's code (suite/starter holds task fixtures, not code)."""
    found = {}
    for folder, package in SCANNED.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "starter" in path.relative_to(ROOT).parts:
                continue
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            name = ".".join([package, *[p for p in parts if p != "__init__"]])
            found[name] = (path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def declared(name):
    return name in settings.VARIABLES or any(name.startswith(prefix) for prefix in FAMILIES)


def constants(tree):
    """`{Name: str}` of a module's top-level string constants (`OVERRIDE_ENV = "BENCH_CONNECT_PROVIDERS"`)."""
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def text_of(node, known):
    """A name given as a literal or a module constant, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return known.get(node.id) if isinstance(node, ast.Name) else None


def is_environ(node):
    return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name) \
        and node.value.id == "os"


def environ_problem(node, parents, known):
    """Why this use of `os.environ` breaks the rule, or `""`: another tool's variable may be looked up by its
    literal name and ours only written (for a child, or the demo's own folder); the whole environment may be
    handed on (a child's copy, the launcher's mapping), never searched."""
    parent = parents[node]
    if isinstance(parent, ast.Attribute) and parent.attr == "get":
        call = parents[parent]
        return looked_up(text_of(call.args[0], known) if call.args else None)
    if isinstance(parent, ast.Subscript) and parent.value is node:
        name = text_of(parent.slice, known)
        if isinstance(parent.ctx, ast.Store):
            return "" if name and declared(name) else f"writes {name or 'a variable it does not name'}, undeclared"
        return looked_up(name)
    if isinstance(parent, ast.Compare):
        return "asks whether a variable is set: read it with settings.env"
    handed_on = (isinstance(parent, ast.Dict) and node in parent.values and None in parent.keys) \
        or (isinstance(parent, ast.Call) and node in parent.args) or isinstance(parent, ast.IfExp)
    return "" if handed_on else "reads the whole environment: settings.family reads a family of variables"


def looked_up(name):
    if name is None:
        return "reads a variable it does not name"
    if name not in settings.VARIABLES:
        return f"reads {name}, which metrics/core/settings.py does not declare"
    if not settings.VARIABLES[name].owner:
        return f"reads {name} past the table: use settings.env({name!r})"
    return ""


def environment_problems(module, tree):
    if module == "benchwarmers.core.settings":
        return []
    known = constants(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "getenv" and getattr(node.value, "id", "") == "os":
            problems.append((node.lineno, "os.getenv: use settings.env"))
        problem = environ_problem(node, parents, known) if is_environ(node) else ""
        if problem:
            problems.append((node.lineno, problem))
    return [f"{module}:{line}: {problem}" for line, problem in problems]


def test_every_variable_the_code_reads_is_declared_and_read_through_the_table():
    """An `os.environ` read names its variable, the table declares it, and only another tool's variable
    (XDG_DATA_HOME, LLM_USER_PATH) is read past `settings.env`."""
    problems = [p for module, (_, tree) in modules().items() for p in environment_problems(module, tree)]
    assert not problems, "\n".join(problems)


def test_every_variable_the_code_names_is_declared():
    """A BENCH_* or BENCHWARMERS_* name anywhere in the code (a read through a helper, a mapping the launcher
    is given, a child's environment, a message, a docstring) is a variable of the table or of one of its
    families."""
    undeclared = sorted({f"{module}: {name}" for module, (_, tree) in modules().items()
                         for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                         for name in NAMED.findall(node.value) if not declared(name)})
    assert not undeclared, "\n".join(undeclared)


def test_settings_env_names_a_declared_variable_and_its_module_is_a_reader():
    """`settings.env("X")` with X written out: X is declared and lists the module among its readers; a name
    given at run time is checked then (a KeyError)."""
    problems = []
    for module, (_, tree) in modules().items():
        known = constants(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "env"
                    and getattr(node.func.value, "id", "") == "settings" and node.args):
                continue
            name = text_of(node.args[0], known)
            if name is None:
                continue
            if name not in settings.VARIABLES:
                problems.append(f"{module}:{node.lineno}: {name} is not declared")
            elif module.removeprefix("benchwarmers.") not in settings.VARIABLES[name].readers:
                problems.append(f"{module}:{node.lineno}: {name}'s readers leave out {module}")
    assert not problems, "\n".join(problems)
    with pytest.raises(KeyError):
        settings.env("BENCH_NOT_A_SETTING")


def test_the_table_is_well_formed():
    every = modules()
    labels = [s.label for s in settings.SETTINGS]
    assert len(labels) == len(set(labels)), "a setting is declared twice"
    for s in settings.SETTINGS:
        assert s.meaning and s.readers, s.label
        assert all(f"benchwarmers.{reader}" in every for reader in s.readers), s.label
        assert s.kind == "config" or isinstance(s.default, str), f"{s.name}: a variable's default is its text"
        assert not (s.set_by and s.owner), s.label


def test_the_documented_table_is_the_generated_one():
    """docs/configuration.md's "Settings" tables are `bench settings --markdown`, word for word: change the table in
    metrics/core/settings.py, then paste its output between the markers."""
    found = PAGE_TABLE.search(SETTINGS_PAGE.read_text(encoding="utf-8"))
    assert found, "docs/configuration.md has no settings table between its markers"
    assert found.group(1) == settings.markdown()


def test_blank_is_unset_and_defaults_come_from_the_table(monkeypatch):
    monkeypatch.setenv("BENCH_BIND", "  ")
    monkeypatch.delenv("BENCH_PORT", raising=False)
    assert settings.env("BENCH_BIND") == "127.0.0.1" and settings.env("BENCH_PORT") == "8122"
    monkeypatch.setenv("BENCH_PORT", " 9000 ")
    assert settings.env("BENCH_PORT") == " 9000 "  # as set: each reader decides what blanks around it mean
    monkeypatch.setenv("benchwarmers_key_My_Hub", "k1")
    monkeypatch.setenv("BENCHWARMERS_KEY_", "no name")
    monkeypatch.setenv("BENCHWARMERS_KEY_EMPTY", "")
    assert settings.family("BENCHWARMERS_KEY_") == {"My_Hub": "k1"}


def test_config_files_owners_fall_back_to_the_tables_defaults(home, monkeypatch):
    """With no config files in the data folder, each owner's reader gives the table's default."""
    monkeypatch.delenv("BENCH_CLIENT", raising=False)
    paths.data()  # made first, so the shipped files it copies are gone below
    for name in ("gateway.json", "client.json", "scheduler.json", "ui.json", "connections.json", "connect.json"):
        (home / "config" / name).unlink(missing_ok=True)
    table = {(s.file, s.name): s.default for s in settings.SETTINGS if s.file}
    gateway = {k: v for (f, k), v in table.items() if f == "gateway.json"}
    for read in (collections.settings(), collections.DEFAULTS):
        assert {k: v for k, v in dataclasses.asdict(read).items() if k != "problems"} == gateway
    assert collections.DEFAULTS.policy == policy.DEFAULT
    mode, on = jobs.state()
    assert mode == table["scheduler.json", "mode"] and all(on.values()) and table["scheduler.json", "jobs"] == {}
    assert client.chosen() == (table["client.json", "client"], "default")
    assert themes.saved() == table["ui.json", "theme"]
    assert connections.facts() == {k: v for (f, k), v in table.items() if f == "connections.json"}
    assert providers.own_ids() == table["connect.json", "client_ids"]
    assert registry.options("anyone") == table["model-options.json", "<alias>"]
    assert tasks.repos() == table["repos.json", "<name>"]


def bench_settings(home, *args, **env):
    """`bench settings ...` as typed: the real launcher in a child, with only `env` set beside PATH."""
    clean = {k: v for k, v in os.environ.items() if not NAMED.match(k) and k not in settings.VARIABLES}
    done = subprocess.run([sys.executable, "-m", "benchwarmers.cli.launcher", "settings", *args],
                          env={**clean, "BENCHWARMERS_HOME": str(home), **env},
                          capture_output=True, text=True, encoding="utf-8", timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rows(screen):
    """`{name: (value, source)}` of `bench settings`' lines."""
    found = {}
    for line in screen.splitlines()[3:]:
        name, value, source = re.fullmatch(r"(\S+(?: \S+)?)\s{2,}(.+?)\s{2,}(\S.*)", line).groups()
        found[name] = (value, source)
    return found


def test_bench_settings_shows_values_and_where_they_came_from(tmp_path):
    home = tmp_path / "bench"
    (home / "config").mkdir(parents=True)
    (home / "config" / "gateway.json").write_text(json.dumps({"max_calls": 3, "policy": "thompson", "_why": "x"}))
    (home / "config" / "model-options.json").write_text(json.dumps({"beta": {"max_tokens": 9}, "alpha": {}}))
    token = "s3cret-admin-token-0123456789"
    env = {"BENCH_PORT": "9100", "BENCHWARMERS_ADMIN_TOKEN": token, "BENCHWARMERS_KEY_MY_HUB": "sk-hub-secret",
           "BENCH_BIND": " "}
    screen = bench_settings(home, **env)
    assert screen.splitlines()[0] == f"Data folder: {home} (BENCHWARMERS_HOME names it)"
    shown = rows(screen)
    assert shown["BENCH_PORT"] == ("9100", "environment")
    assert shown["BENCH_BIND"] == ("127.0.0.1", "default")  # blank is unset
    assert shown["BENCHWARMERS_ADMIN_TOKEN"] == ("set (hidden)", "environment")
    assert shown["BENCHWARMERS_KEY_<NAME>"] == ("set for my-hub", "environment")
    assert token not in screen and "sk-hub-secret" not in screen
    assert shown["gateway.json max_calls"] == ("3", "data folder")
    assert shown["gateway.json policy"] == ("thompson", "data folder")
    assert shown["gateway.json max_explorers"] == ("2", "default")
    assert shown["model-options.json <alias>"] == ("alpha, beta", "data folder")
    assert shown["ui.json theme"] == ("hardwood", "default")
    assert "XDG_DATA_HOME" not in shown and "BENCHWARMERS_PROG" not in shown  # unset, and not yours to set
    assert len(shown) == len([s for s in settings.SETTINGS if not (s.set_by or s.owner)])
    assert bench_settings(home, "--list", **env) == screen
    assert bench_settings(home, "--markdown").strip() == settings.markdown()


def test_settings_with_an_action_is_still_the_clis():
    assert launcher.plan(["settings"], {}) == launcher.plan(["settings", "--list"], {}) == {"settings": "list"}
    assert launcher.plan(["settings", "--markdown"], {}) == {"settings": "markdown"}
    for argv in (["settings", "gateway", "--max-calls", "3", "--max-explorers", "1"], ["settings", "--help"],
                 ["settings", "--nope"]):
        assert launcher.plan(argv, {}, cwd="/here")["script"] == "benchwarmers.cli.cli"


def test_completion_offers_the_settings_list():
    """bash completes `bench settings --` with the launcher's options, beside the CLI's actions."""
    commands = {name: actions for name, _, _, actions in launcher.completion_commands()}
    assert {"gateway", "client", "scheduler", "--list", "--markdown"} == set(commands["settings"])
    script = completion.script("bash", launcher.completion_commands())
    program = f"""{script}
COMP_WORDS=(bench settings --); COMP_CWORD=2
_benchwarmers_complete; printf '%s\\n' "${{COMPREPLY[@]}}" """
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["--list", "--markdown"]


def test_the_data_folder_variable_is_the_one_paths_reads(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHWARMERS_HOME", f"  {tmp_path}  ")
    assert paths.resolve() == (tmp_path, paths.REASON_ENV)

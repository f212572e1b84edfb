"""The `bench` CLI (suite-cli-mcp.md §9) and the launcher (§10), run as a user types them (`python -m
benchwarmers.cli.launcher`, what the `bench` and `benchwarmers` console scripts call) against a real gateway on
127.0.0.1: every built command's happy path and refusals, exit codes, the stdout/stderr split, `--json`,
the server not running, Ctrl-C; the launcher's `plan()` (LN-1..7) and real runs (LN-8..10, `bench demo`);
shell completion."""

import argparse
import io
import json
import os
import pty
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchwarmers import __version__
from benchwarmers.core import fileio, keys, paths
from benchwarmers.net import remote
from benchwarmers.models import endpoints, registry
from benchwarmers.panel import collections, offload
from benchwarmers.demo import demo
from benchwarmers.server import gatekeys
from benchwarmers.cli import cli, completion, launcher
from conftest import TEST_MODELS, wait_for

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Is this loop off by one?"


@pytest.fixture
def core(bench):
    demo.set_collection("core", ["alpha", "gamma"], description="code review")
    demo.set_collection("crawl", ["slow"])
    bench.set_model("slow", answer="Slow: done at last.", latency=2.6, context_window=32000)
    yield bench
    # a panel the CLI gave up on still ends and writes its seat: wait for it here, while this test's data folder
    # is still the one in force, or it lands in whatever folder the next test leaves behind
    asked = lambda: sum(r["model"] == "slow" for r in bench.requests)  # noqa: E731
    assert wait_for(lambda: sum(e.model == "slow" for e in offload.lines()) >= asked(), 10)


def bench_env(url=None, **extra):
    env = {**os.environ, "BENCHWARMERS_PROG": "bench", **extra}
    if url is not None:
        env["BENCHWARMERS_URL"] = url
    return {k: v for k, v in env.items() if v is not None}


def run(url, *args, stdin="", cwd=None, **extra):
    """`bench <args>` as typed: `(exit code, stdout, stderr)`."""
    done = subprocess.run([sys.executable, "-m", "benchwarmers.cli.launcher", *args], input=stdin, capture_output=True,
                          text=True, env=bench_env(url, **extra), cwd=cwd or ROOT, timeout=60)
    return done.returncode, done.stdout, done.stderr


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def last_prompt(upstream):
    """The last user message a seat was sent."""
    messages = upstream.requests[-1]["body"]["messages"]
    return [m for m in messages if m["role"] == "user"][-1]["content"], messages


# -- ask ------------------------------------------------------------------------------------------------------

def test_ask_answer_on_stdout_seats_on_stderr(gateway, core, tmp_path):
    """§9.2 ask, CLI-8: words and a file make the prompt; the answer goes to stdout, each seat as it finishes and
    the seat table with the verdict hint to stderr."""
    (tmp_path / "app.py").write_text("for i in range(1, len(xs)):\n    total += xs[i]\n\n", encoding="utf-8")
    code, out, err = run(gateway, "ask", "bench/core", "Is", "this", "off", "by", "one?", "-f", "app.py", cwd=tmp_path)
    assert code == 0, err
    sent, _ = last_prompt(core)
    assert sent == "Is this off by one?\n\n`app.py`:\n```\nfor i in range(1, len(xs)):\n    total += xs[i]\n```"
    assert core.answer_for("alpha", sent) in out and core.answer_for("gamma", sent) in out
    assert not any(line.startswith("call  ") for line in out.splitlines()) and "bench verdict <call>" not in out
    assert "member alpha: ok" in err and "(2 of 2 seats)" in err
    lines = err.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("call"))
    assert lines[header].split() == ["call", "seat", "alias", "status", "seconds"]
    assert lines[header - 1] == "" and "bench verdict <call> --useful|--not-useful" in lines[header - 2]  # issue 30


def test_ask_reads_stdin_with_a_system_message(gateway, core):
    """CLI-8: `-` reads stdin (so does no word with a pipe); --system comes first."""
    code, _, err = run(gateway, "ask", "core", "--system", "You review diffs.", "-", stdin="diff --git a b\n")
    assert code == 0, err
    sent, messages = last_prompt(core)
    assert sent == "diff --git a b\n" and messages[0] == {"role": "system", "content": "You review diffs."}
    code, _, _ = run(gateway, "ask", "core", stdin="piped words")
    assert code == 0 and last_prompt(core)[0] == "piped words"


def test_ask_refusals(gateway, core, tmp_path):
    """CLI-8: nothing to ask → 2; an unreadable file → 1; an unknown collection → the server's 404, nothing on
    stdout."""
    code, out, err = run(gateway, "ask", "core")
    assert (code, out, err) == (2, "", "bench: nothing to ask: give a prompt, -f FILE, or pipe one in\n")
    code, out, err = run(gateway, "ask", "core", "x", "-f", str(tmp_path / "missing.py"))
    assert (code, out) == (1, "") and err.startswith(f"bench: cannot read {tmp_path / 'missing.py'}: ")
    code, out, err = run(gateway, "ask", "nowhere", PROMPT)
    assert (code, out) == (1, "")
    assert err.startswith("bench: POST /v1/chat/completions refused (404): ") and "bench/core" in err


def test_ask_json_is_the_servers_reply_with_merged_and_with(gateway, core):
    """`--json` (before or after the command) prints the server's reply whole; `--merged` and `--with` reach it."""
    code, out, err = run(gateway, "--json", "ask", "core", PROMPT, "--merged", "--with", "nobody")
    assert (code, err) == (0, "")
    reply = json.loads(out)
    assert reply["object"] == "chat.completion" and reply["bench"]["reply"] == "merged"
    assert any("nobody" in skipped["alias"] for skipped in reply["bench"]["skipped"])
    code, out, _ = run(gateway, "ask", "core", "--all", PROMPT, "--json")
    assert code == 0 and "merger" not in json.loads(out)["bench"]


def test_ask_timeout_is_exit_1(gateway, core):
    """CLI-4: no answer within BENCHWARMERS_TIMEOUT → 1, saying how to wait longer."""
    code, _, err = run(gateway, "ask", "crawl", PROMPT, "--json", BENCHWARMERS_TIMEOUT="1")
    assert code == 1 and "in 1 s; set BENCHWARMERS_TIMEOUT for longer panels" in err


def test_ctrl_c_is_130(gateway, core):
    """§9: Ctrl-C (SIGINT to the terminal's process group: launcher and CLI) ends with 130."""
    core.clear()
    child = subprocess.Popen([sys.executable, "-m", "benchwarmers.cli.launcher", "ask", "crawl", PROMPT],
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=bench_env(gateway), start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not core.requests:
        time.sleep(0.05)  # the panel has reached the upstream: the CLI is waiting on it
    os.killpg(child.pid, signal.SIGINT)
    _, err = child.communicate(timeout=20)
    assert child.returncode == 130 and "bench: stopped" in err


# -- verdicts, records, pending, collections --------------------------------------------------------------------

def panel_calls(gateway):
    code, out, _ = run(gateway, "ask", "core", PROMPT, "--json")
    assert code == 0
    return [seat["call"] for seat in json.loads(out)["bench"]["seats"]]


def test_verdict_record_and_pending(gateway, core, tmp_path):
    """§9.2 verdict; `record` and `pending` read GET /bench/record and POST /bench/pending."""
    calls = panel_calls(gateway)
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(json.dumps({"said": " and ".join(calls)}) + "\n", encoding="utf-8")
    code, out, err = run(gateway, "pending", "-f", str(transcript))
    assert (code, out.split(), err) == (0, calls, "")
    code, out, _ = run(gateway, "verdict", calls[0], "--useful", "--real", "a", "--false", "b", "--note", "checked")
    assert (code, out) == (0, f"recorded {calls[0]}: useful, 1 real, 1 false\n")
    assert run(gateway, "pending", *calls)[1].split() == calls[1:]
    code, out, _ = run(gateway, "record", "core")
    assert code == 0 and out.splitlines()[0].split() == ["alias", "useful", "notUseful", "judged", "lastAt"]
    assert out.splitlines()[2].split()[:4] == ["alpha", "1", "0", "1"]
    assert json.loads(run(gateway, "record", "core", "--task", "checked", "--json")[1])["aliases"]["alpha"]["judged"] == 1
    code, out, err = run(gateway, "record", "core", "--task", "never said")
    assert (code, out) == (0, "") and "no verdicts yet in bench/core" in err


def test_verdict_refusals(gateway, core):
    """§9.2: an unknown call → 1 naming it; exactly one of --useful/--not-useful (else 2); no ids for pending → 2."""
    code, out, err = run(gateway, "verdict", "p20260101-000000-abcd.member1", "--not-useful")
    assert (code, out) == (1, "") and "p20260101-000000-abcd.member1" in err and "(404)" in err
    assert run(gateway, "verdict", "p20260101-000000-abcd.member1")[0] == 2
    assert run(gateway, "verdict", "x", "--useful", "--not-useful")[0] == 2
    assert run(gateway, "pending")[0] == 2


def test_collections_table_json_names_and_url(gateway, core):
    """§9.2 collections: the twins folded; `--json` the whole reply; `--url` before or after the command;
    BENCHWARMERS_URL with `/v1` works (§9)."""
    code, out, _ = run(gateway + "/v1/", "collections")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["name", "members", "explorers", "reply", "description"]
    assert [line.split()[0] for line in lines[2:]] == ["core", "crawl"]
    assert "alpha, gamma" in lines[2] and "code review" in lines[2]
    reply = json.loads(run("http://127.0.0.1:9", "collections", "--json", "--url", gateway)[1])
    assert "bench/core:merged" in [row["id"] for row in reply["data"]]
    assert run("http://127.0.0.1:9", "--url", gateway, "collections", "--names")[1] == "core\ncrawl\n"


def test_keys_required(gateway, core, monkeypatch):
    """CLI-1, CLI-3: with keys required, no key → 1 saying to set BENCHWARMERS_KEY; the key in it → done; a
    scoped key sees only its collections."""
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    code, _, err = run(gateway, "collections")
    assert code == 1 and err.rstrip().endswith("; set BENCHWARMERS_KEY (a gateway key)") and "(401)" in err
    key = gatekeys.make("shell", collections=["crawl"])
    assert run(gateway, "collections", "--names", BENCHWARMERS_KEY=key)[1] == "crawl\n"
    code, _, err = run(gateway, "ask", "core", PROMPT, BENCHWARMERS_KEY=key)
    assert code == 1 and "(403)" in err and "may call bench/crawl" in err


def test_openapi_says_where_the_document_is(gateway, core, monkeypatch):
    """Issue 33: `bench openapi` prints the document's URL (what it covers on stderr), `--json` the document; on a
    gateway whose keys are required the key is sent once the (absent) admin token is refused."""
    code, out, err = run(gateway, "openapi")
    assert (code, out) == (0, f"{gateway}/openapi.json\n") and err.startswith("OpenAPI 3.1.0: ")
    assert "/v1/chat/completions" in json.loads(run(gateway, "openapi", "--json")[1])["paths"]
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    assert run(gateway, "openapi")[0] == 1
    key = gatekeys.make("shell")
    assert run(gateway, "openapi", BENCHWARMERS_KEY=key)[:2] == (0, f"{gateway}/openapi.json\n")


def test_not_running_is_exit_3_naming_the_port(gateway, core):
    """CLI-4: nothing listening → 3, `not running` and the port. With no URL set, the dashboard's port is tried,
    then the gateway's (our decision, remote.py)."""
    port = free_port()
    code, out, err = run(f"http://127.0.0.1:{port}", "collections")
    assert (code, out) == (3, "") and "not running" in err and str(port) in err
    gateway_port = gateway.rsplit(":", 1)[1]
    code, out, _ = run(None, "collections", "--names", BENCHWARMERS_URL=None, BENCH_PORT=str(port),
                       BENCH_GATEWAY_PORT=gateway_port)
    assert (code, out) == (0, "core\ncrawl\n")
    other = free_port()
    code, _, err = run(None, "collections", BENCHWARMERS_URL=None, BENCH_PORT=str(port), BENCH_GATEWAY_PORT=str(other))
    assert code == 3 and str(port) in err and str(other) in err


def test_help_and_version(gateway):
    """CLI-10, LN-2, LN-4: a command's help has its examples; `bench --help` fits a screen; versions."""
    code, out, _ = run(gateway, "ask", "--help")
    assert code == 0 and "examples:" in out and "--merged" in out
    code, out, _ = run(gateway, "--help")
    assert code == 0 and len(out.splitlines()) <= 24 and max(map(len, out.splitlines())) <= 110
    assert all(name in out for name in ("gateway", "mcp", "demo", "ask <collection> [prompt]", "BENCHWARMERS_HOME",
                                        "endpoints | endpoint | candidates", "onboard", "dismiss", "BENCH_PORT"))
    assert run(gateway, "--version")[1] == f"{__version__}\n"
    assert run(gateway, "status", "--version")[:2] == (0, f"{__version__}\n")  # issue 30: after the command too
    assert run(gateway, "key", "create", "--version")[:2] == (0, f"{__version__}\n")
    done = subprocess.run([sys.executable, "-m", "benchwarmers.cli.cli", "--version"], capture_output=True, text=True,
                          env=bench_env(gateway))
    assert done.stdout == f"bench {__version__}\n"


# -- the launcher -----------------------------------------------------------------------------------------

def test_ln1_to_ln6_plan():
    """LN-1..6: what each command line means, decided without side effects."""
    env = {"BENCHWARMERS_PROG": "bench"}
    assert launcher.plan(["--version"], env) == launcher.plan(["-v"], env) == {"say": __version__, "code": 0}
    serve = {"script": "benchwarmers.dashboard.serve", "args": [], "cwd": str(paths.CODE), "first_run": True}
    assert launcher.plan([], env) == launcher.plan(["serve"], env) == serve  # LN-3
    assert launcher.plan(["--anything"], env) == {**serve, "args": ["--anything"]}
    assert launcher.plan(["--help"], env)["code"] == 0 and launcher.plan(["--help"], env)["say"].startswith("bench: ")
    assert launcher.plan(["init", "/x", "--help"], env, cwd="/here") == {
        "script": "benchwarmers.scripts.init", "args": ["/x", "--help"], "cwd": "/here", "first_run": False}  # LN-6
    nope = launcher.plan(["nope"], env)
    assert (nope["code"], nope["stderr"]) == (2, True) and nope["say"].startswith('bench: no command "nope"\n\n')
    assert launcher.plan(["ask", "core", "hi", "--help"], env, cwd="/somewhere") == {
        "script": "benchwarmers.cli.cli", "args": ["ask", "core", "hi", "--help"], "cwd": "/somewhere", "first_run": False}
    assert launcher.plan(["gateway", "--port", "9"], env) == {
        "script": "benchwarmers.server.gateway", "args": ["--port", "9"], "cwd": str(paths.CODE), "first_run": True}
    assert launcher.plan(["demo"], env) == {"script": "benchwarmers.dashboard.serve", "args": ["--demo"], "cwd": str(paths.CODE),
                                            "first_run": False}
    assert launcher.plan(["mcp"], env, cwd="/here") == {
        "script": "benchwarmers.server.mcp_server", "args": [], "cwd": "/here", "first_run": False}
    assert launcher.plan(["gateway", "--port", "9", "-h"], env)["say"] == launcher.plan(["-h"], env)["say"]
    assert launcher.plan(["-h"], {}, argv0="/usr/bin/benchwarmers")["say"].startswith("benchwarmers: ")
    assert launcher.plan(["-h"], {}, argv0="/usr/bin/python3")["say"].startswith("benchwarmers: ")
    assert launcher.plan(["completion"], env)["code"] == 2


def test_ln7_child_environment(tmp_path):
    """LN-7: the data folder always set, no bytecode, UTF-8, who launched it; the import path untouched."""
    child = launcher.child_env({"BENCHWARMERS_HOME": "~/bw", "PYTHONPATH": "/x"}, "bench")
    assert child["BENCHWARMERS_HOME"] == str(Path("~/bw").expanduser())
    assert (child["PYTHONDONTWRITEBYTECODE"], child["PYTHONUTF8"], child["BENCHWARMERS_LAUNCHER"]) == ("1", "1", "pip")
    assert child["PYTHONPATH"] == "/x"  # passed through as it was: the launcher adds nothing to the import path
    assert child["PYTHONSAFEPATH"] == "1"  # nor the cwd, which for a server is CODE: the package folder, installed
    assert launcher.child_env({"BENCHWARMERS_LAUNCHER": "npm"}, "bench")["BENCHWARMERS_LAUNCHER"] == "npm"


def test_ln5_ln10_unknown_command(gateway):
    """LN-5, LN-10: `nope` exits 2 with nothing on stdout and `nope` on stderr."""
    code, out, err = run(gateway, "nope")
    assert (code, out) == (2, "") and '"nope"' in err


def start_server(*args, **extra):
    """`bench <args>` (a server) in its own process group; returns the process once it printed its base URL."""
    child = subprocess.Popen([sys.executable, "-m", "benchwarmers.cli.launcher", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=bench_env(None, **extra), start_new_session=True)
    lines = []
    while not any(" on http://" in line for line in lines):
        line = child.stdout.readline()
        assert line, (lines, child.stderr.read())
        lines.append(line)
    return child, lines


def stop_server(child):
    os.killpg(child.pid, signal.SIGINT)  # as Ctrl-C in its terminal: the launcher waits, the server drains
    child.communicate(timeout=30)
    return child.returncode


def test_ln8_first_run_makes_the_data_folder(tmp_path):
    """LN-8: `bench gateway` on a machine with no data folder says so and makes it; Ctrl-C ends it with 0."""
    home = tmp_path / "fresh"
    child, lines = start_server("gateway", "--port", "0", BENCHWARMERS_HOME=str(home))
    assert lines[0] == f"First run: making your data folder at {home}\n"
    assert any(line.startswith("Next: the dashboard starts now") for line in lines)  # IN-6, the first run only
    assert all((home / part).is_dir() for part in ("config", "metrics", "runs"))
    assert stop_server(child) == 0


def test_bench_demo_then_ask_and_verdict(tmp_path):
    """Issue 17: `bench demo`, then `bench ask demo "…"` and `bench verdict <call> --useful` work from a fresh
    install (here: a data folder that does not exist yet, which the demo never makes)."""
    home = tmp_path / "never"
    child, lines = start_server("demo", "--port", "0", BENCHWARMERS_HOME=str(home))
    try:
        base = next(line for line in lines if " on http://" in line).split(" on ", 1)[1].split()[0]
        code, out, err = run(base, "ask", "demo", "Is x++ ok?")
        assert code == 0 and "## member — terse" in out
        call = next(line.split()[0] for line in err.splitlines() if line.startswith("p2"))
        assert run(base, "verdict", call, "--useful")[0:2] == (0, f"recorded {call}: useful, 0 real, 0 false\n")
    finally:
        assert stop_server(child) == 0
    assert not home.exists()


# -- completion --------------------------------------------------------------------------------------------

def bash_complete(line, url):
    """The words bash's completion offers for `line` (the cursor at its end), with `bench` on PATH."""
    script = completion.script("bash", launcher.completion_commands())
    words = line.split(" ")
    program = f"""{script}
bench() {{ {sys.executable} -m benchwarmers.cli.launcher "$@"; }}
COMP_WORDS=({" ".join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}
_benchwarmers_complete; printf '%s\\n' "${{COMPREPLY[@]}}" """
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, env=bench_env(url), cwd=ROOT,
                          timeout=30)
    return done.stdout.split()


def test_bash_completion_commands_options_and_collections(gateway, core):
    """Issue 17 item 3: commands, a command's actions and options, and collection names from the server when
    reachable; `bench completion bash` prints the script."""
    script = completion.script("bash", launcher.completion_commands())
    assert run(gateway, "completion", "bash")[1].strip() == script.strip()
    assert bash_complete("bench co", gateway) == ["collections", "collection", "completion"]
    assert "--merged" in bash_complete("bench ask core --m", gateway)
    assert bash_complete("bench ask c", gateway) == ["core", "crawl"]
    assert bash_complete("bench ask c", f"http://127.0.0.1:{free_port()}") == []  # no server: nothing, no error
    assert bash_complete("bench model re", gateway) == ["rename", "retire", "restore", "retry"]
    assert bash_complete("bench collection show c", gateway) == ["core", "crawl"]
    assert bash_complete("bench model retire alpha --", gateway) == ["--help", "--json", "--reason", "--url", "--yes"]


def test_zsh_completion_names_every_command():
    """The zsh script offers each command with its summary, and collection names through `collections --names`."""
    script = completion.script("zsh", launcher.completion_commands())
    assert script.rstrip().endswith("compdef _benchwarmers bench benchwarmers")
    assert "'ask:put a prompt to every seat of a collection'" in script and "collections --names" in script
    assert all(f"'{name}:" in script for name in ("gateway", "demo", "mcp", *launcher.client_commands()))


def test_a_long_panel_says_how_long_it_has_run(capsys):
    """Issue 17 item 2: between seats, a long panel's elapsed time and seats so far go to stderr, never stdout."""
    asking = cli.Asking(remote.Server(base="http://127.0.0.1:9"), every=0)
    asking.piece("Bench bench/core p20260101-000000-abcd · 2 members + 1 explorers · explorer shape review\n")
    asking.tick()
    out, err = capsys.readouterr()
    assert out.startswith("Bench bench/core") and err == "[0 s]  still asking: 0 s, 0 of 3 seats answered\n"


def test_cli_table_cells():
    """CLI-7: None and False empty, True `yes`, lists joined; no trailing space."""
    assert cli.table([{"a": True, "b": None}, {"a": ["x", "y"], "b": False}], ["a", "b"]) == "a     b\n----  -\nyes\nx, y"


# -- managing the bench through the dashboard's routes (§9.2) ----------------------------------------------------

@pytest.fixture
def dash(core):
    """The real dashboard (which answers the gateway routes too) on a free port of 127.0.0.1: its base URL."""
    from benchwarmers.dashboard import serve

    srv = serve.serve("127.0.0.1", 0)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def bench_cli(capsys, monkeypatch):
    """`bench <args>` in this process (cli.main, as the launcher's child runs it), stdin a pipe holding `stdin`:
    `(exit code, stdout, stderr)`."""

    def typed(*args, stdin=""):
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        try:
            code = cli.main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return typed


def config(name):
    return fileio.read_json(paths.file("config", name))


def test_status_human_and_json(dash, bench_cli):
    """§9.2 status, CLI-11: `--json` is the server's reply (gateway on this port, collections counted, every
    job, auth); the human lines say the same; `--json` before or after the command."""
    port = dash.rsplit(":", 1)[1]
    code, out, err = bench_cli("--url", dash, "status", "--json")
    reply = json.loads(out)
    assert (code, err) == (0, "") and reply["gateway"].endswith(f":{port}/v1") and reply["collections"] == 2
    assert reply["scheduler_jobs"] and reply["auth"] is False
    assert json.loads(bench_cli("--json", "status", "--url", dash)[1]) == reply
    code, out, _ = bench_cli("status", "--url", dash)
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"Benchwarmers {reply['version']} at {dash}"
    assert f"  models       {reply['models']} chat, 0 decision, 0 retired" in lines
    assert f"  endpoints    1 (default {reply['default_endpoint']})" in lines
    assert "  auth         none (this machine only)" in lines and "  client       builtin    scheduler off" in lines


def test_models_filters_and_model_writes(dash, bench_cli):
    """§9.2 models and model …: filters, the table, `--json` with the filtered rows; role, ad hoc, max tokens,
    rename, retire (confirmed), restore, retry; the server's refusals exit 1 with its words; a bad number is
    a usage error (§13.16)."""
    code, out, _ = bench_cli("--url", dash, "models", "--find", "ALP")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["alias", "role", "status", "connection", "endpoint", "served"]
    assert [line.split()[0] for line in lines[2:]] == ["alpha"]
    code, out, err = bench_cli("--url", dash, "model", "role", "alpha", "code", "--json")
    assert (code, err) == (0, "") and json.loads(out)["changed"] == ["config/model-roles.json"]
    code, out, _ = bench_cli("--url", dash, "models", "--role", "code", "--json")
    assert [row["alias"] for row in json.loads(out)["models"]] == ["alpha"]
    assert bench_cli("--url", dash, "model", "ad-hoc", "alpha", "on")[1] == "ad-hoc: alpha done\n"
    assert config("model-roles.json")["ad_hoc"] == ["alpha"]
    code, out, _ = bench_cli("--url", dash, "model", "max-tokens", "alpha", "4096")
    assert code == 0 and out.strip() and config("model-options.json")["alpha"] == {"max_tokens": 4096}
    assert bench_cli("--url", dash, "model", "max-tokens", "alpha", "none")[0] == 0
    assert "alpha" not in config("model-options.json")
    code, out, err = bench_cli("--url", dash, "model", "max-tokens", "alpha", "lots")
    assert (code, out) == (2, "") and "'lots' is not a whole number" in err
    code, out, err = bench_cli("--url", dash, "model", "rename", "gamma", "gamma-2")
    assert (code, out, err) == (0, "rename: gamma done\n", "note: synced to the llm CLI\n")
    code, out, err = bench_cli("--url", dash, "model", "role", "nobody", "code")
    assert (code, out, err) == (1, "", "bench: 'nobody' is not a registered alias\n")
    code, out, err = bench_cli("--url", dash, "model", "retire", "alpha")
    assert (code, out) == (2, "") and err.startswith("bench: retire alpha (") and "add --yes" in err
    assert bench_cli("--url", dash, "models", "--find", "alpha")[1].splitlines()[2].startswith("alpha ")
    assert bench_cli("--url", dash, "model", "retire", "alpha", "--reason", "too slow", "-y")[0] == 0
    assert config("retired.json")["alpha"]["why"] == "too slow"
    code, out, _ = bench_cli("--url", dash, "models", "--all", "--find", "alpha")
    assert code == 0 and out.splitlines()[0].split()[-1] == "retired" and out.splitlines()[2].rstrip().endswith("yes")
    assert bench_cli("--url", dash, "models", "--find", "alpha")[2] == "no models\n"
    assert bench_cli("--url", dash, "model", "restore", "alpha")[1] == "restore: alpha done\n"
    code, out, _ = bench_cli("--url", dash, "model", "retry", "alpha")
    assert code == 0 and out.startswith("alpha answered in ")


def test_collection_show_save_and_rm(dash, bench_cli):
    """§9.2 collection …, CLI-9, CLI-11: save makes and changes (what is given replaces, the rest kept), show
    prints the entry as JSON, rm asks first (no terminal, no --yes → 2 and it survives); refusals exit 1."""
    code, out, _ = bench_cli("--url", dash, "collection", "save", "bench/second", "--members", "alpha, beta",
                             "--description", "second opinions", "--tags", "review,fast")
    assert (code, out) == (0, "saved collection second: alpha, beta\n")
    code, out, _ = bench_cli("--url", dash, "collection", "save", "second", "--add", "gamma,alpha", "--remove", "beta")
    assert (code, out) == (0, "saved collection second: alpha, gamma\n")
    saved = collections.load()["second"]
    assert (saved.members, saved.description, saved.tags) == (("alpha", "gamma"), "second opinions", ("review", "fast"))
    code, out, _ = bench_cli("--url", dash, "collection", "show", "bench/second")
    assert code == 0 and json.loads(out)["members"] == ["alpha", "gamma"] and json.loads(out)["name"] == "second"
    code, out, err = bench_cli("--url", dash, "collection", "show", "nope")
    assert (code, out, err) == (1, "", "bench: no collection 'nope'; have: core, crawl, second\n")
    code, out, err = bench_cli("--url", dash, "collection", "rm", "second")
    assert (code, out) == (2, "") and "add --yes to do this without a terminal" in err
    assert "second" in collections.load()
    code, out, err = bench_cli("--url", dash, "--json", "collection", "save", "empty")
    assert (code, err) == (1, "bench: a collection needs at least one member\n")
    assert json.loads(out)["ok"] is False and "empty" not in collections.load()
    assert bench_cli("--url", dash, "collection", "rm", "second", "--yes")[1] == "removed bench/second\n"
    assert "second" not in collections.load()


def test_keys_create_list_and_revoke(dash, bench_cli):
    """§9.2 keys, key …, CLI-11: the key alone on stdout and `shown this once` on stderr; the list never holds
    the key or its hash; revoking asks first."""
    code, out, err = bench_cli("--url", dash, "keys")
    assert (code, out, err) == (0, "gateway keys are not required on this machine\n",
                                "no gateway keys: make one with `bench key create NAME`\n")
    code, key, err = bench_cli("--url", dash, "key", "create", "shell", "--collections", "bench/core", "--rpm", "60")
    assert code == 0 and key.startswith("bwk_") and len(key.strip()) == 47 and "shown this once" in err
    code, out, _ = bench_cli("--url", dash, "keys", "--json")
    listed = json.loads(out)
    assert listed["keys"][0]["name"] == "shell" and key.strip() not in out
    assert "sha256" not in out and gatekeys.digest(key.strip()) not in out
    table = bench_cli("--url", dash, "keys")[1].splitlines()
    assert table[1].split() == ["name", "hint", "collections", "rpm", "created", "last_used"]
    assert table[3].split()[:4] == ["shell", f"bwk_…{key.strip()[-4:]}", "core", "60"]
    code, out, err = bench_cli("--url", dash, "key", "create", "shell")
    assert (code, out) == (1, "") and "there is already a key named shell" in err
    assert bench_cli("--url", dash, "key", "revoke", "shell")[0] == 2
    assert bench_cli("--url", dash, "key", "revoke", "shell", "-y")[1] == "revoked shell\n"
    assert json.loads(bench_cli("--url", dash, "keys", "--json")[1])["keys"] == []


def test_settings_gateway_client_and_scheduler(dash, bench_cli):
    """§9.2 settings …: both gateway limits required; the client is the server's to validate; the scheduler's
    jobs start from the server's map (and with nothing given, are shown)."""
    assert bench_cli("--url", dash, "settings", "gateway", "--max-calls", "4", "--max-explorers", "1")[0] == 0
    assert (config("gateway.json")["max_calls"], config("gateway.json")["max_explorers"]) == (4, 1)
    assert bench_cli("--url", dash, "settings", "gateway", "--max-calls", "4")[0] == 2
    code, _, err = bench_cli("--url", dash, "settings", "gateway", "--max-calls", "1", "--max-explorers", "0")
    assert code == 1 and "these collections have more members than 1" in err
    code, _, err = bench_cli("--url", dash, "settings", "client", "llm")
    assert code == 1 and err.startswith("bench: BENCH_CLIENT is set in this server's environment")
    code, out, _ = bench_cli("--url", dash, "settings", "scheduler", "log-only", "--off", "perf,suite")
    assert code == 0 and out.startswith("scheduler log-only; on: ") and "off: perf, suite" in out
    status = json.loads(bench_cli("--url", dash, "status", "--json")[1])
    assert status["scheduler"] == "log-only" and status["scheduler_jobs"]["perf"] is False
    assert status["scheduler_jobs"]["catalog"] is True
    code, out, _ = bench_cli("--url", dash, "settings", "scheduler")
    assert code == 0 and out.startswith("scheduler log-only\njob") and "perf" in out
    code, _, err = bench_cli("--url", dash, "settings", "scheduler", "--on", "nope")
    assert (code, err) == (1, "bench: no job called nope\n")


def test_older_server_and_stopped_server(core, bench_cli):
    """CLI-2, CLI-3, CLI-4: a route this server does not have is "older than this bench" for a GET (the page)
    and a POST (404 unknown endpoint); once the server stops, 3 naming the port."""
    from benchwarmers.dashboard import serve

    srv = serve.serve("127.0.0.1", 0)
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    args = argparse.Namespace(server=remote.Server(base=base), json=False)
    for method in ("GET", "POST"):
        with pytest.raises(cli.Failed) as refused:
            cli.dashboard(args, method, "/api/no-such-route", None if method == "GET" else {})
        assert str(refused.value) == (f"the server at {base} has no /api/no-such-route: it is older than this bench "
                                      f"({__version__}). Upgrade it, or use its dashboard for this.")
    srv.shutdown()
    srv.server_close()
    code, out, err = bench_cli("--url", base, "keys")
    assert (code, out) == (3, "") and "not running" in err and base in err


def test_admin_token_and_gateway_keys_as_typed(dash, monkeypatch):
    """CLI-1, CLI-3, CLI-11 (real runs): with an admin token on the server, none sent → 1 naming
    BENCHWARMERS_ADMIN_TOKEN; a gateway key is not the token; the token → `admin token set`; the gateway routes
    then want BENCHWARMERS_KEY. BENCHWARMERS_URL with `/v1` works."""
    token = "an-admin-token-long-enough-0123456789"
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", token)
    key = gatekeys.make("shell")
    code, out, err = run(dash + "/v1", "status", BENCHWARMERS_ADMIN_TOKEN=None)
    assert (code, out) == (1, "") and err.rstrip().endswith("; set BENCHWARMERS_ADMIN_TOKEN") and "(401)" in err
    code, _, err = run(dash, "status", BENCHWARMERS_ADMIN_TOKEN=key)
    assert code == 1 and "not the admin token" in err
    code, out, _ = run(dash + "/v1/", "status", BENCHWARMERS_ADMIN_TOKEN=token)
    assert code == 0 and "  auth         admin token set, gateway keys required" in out.splitlines()
    code, _, err = run(dash, "collections", BENCHWARMERS_ADMIN_TOKEN=token)
    assert code == 1 and "set BENCHWARMERS_KEY" in err


def test_confirmation_on_a_terminal(dash):
    """CLI-5 (real runs on a pseudo-terminal): the question on stderr, nothing sent before it; only y/yes goes on."""
    for answer, code, said in (("n", 1, "bench: left as it was\n"), ("yes", 0, "")):
        leader, follower = pty.openpty()
        child = subprocess.Popen([sys.executable, "-m", "benchwarmers.cli.launcher", "collection", "rm", "crawl"],
                                 stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=bench_env(dash))
        os.close(follower)
        os.write(leader, f"{answer}\n".encode())
        out, err = child.communicate(timeout=30)
        os.close(leader)
        assert child.returncode == code
        assert err == "remove bench/crawl (callers asking for it will get an error)? [y/N] " + said
        assert ("crawl" in collections.load()) is (answer == "n")
        assert out == ("" if answer == "n" else "removed bench/crawl\n")


# -- endpoints, candidates, onboarding (§9.2, CLI-6) ----------------------------------------------------------

SECRET = "sk-cli-endpoint-0123456789"


@pytest.fixture
def keyed():
    """A provider that lists its models only with SECRET."""
    with demo.Upstream(models={"alpha": dict(TEST_MODELS["alpha"])}, key=SECRET) as up:
        yield up


@pytest.fixture
def other():
    """A second provider, keyless: one model the bench lacks, two it has on its own endpoint."""
    models = {"delta": {"answer": "Delta: the loop is fine.", "latency": 0.01, "context_window": 32000},
              "blank": dict(TEST_MODELS["blank"]), "picker": dict(TEST_MODELS["picker"])}
    with demo.Upstream(models=models) as up:
        yield up


def test_endpoint_add_test_and_key_read_the_key_from_stdin_only(dash, bench_cli, keyed, home):
    """§9.2 endpoint add|test|key, CLI-6: the key comes from stdin (`--key-stdin`), no terminal and no flag
    means none; it is never printed, never in a reply and never in the data folder; refusals exit 1 or 2."""
    code, out, _ = bench_cli("--url", dash, "endpoints")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["name", "base", "kind", "hub", "default", "key_set", "models"]
    assert lines[2].split()[0] == "demo" and "yes" in lines[2].split()
    code, out, err = bench_cli("--url", dash, "endpoint", "add", "prov")
    assert (code, out, err) == (2, "", "bench: give the base URL: bench endpoint add prov --base https://...\n")
    code, out, err = bench_cli("--url", dash, "endpoint", "test", "prov", "--base", keyed.base_url, "--key-stdin",
                               stdin=SECRET + "\nnot this line\n")
    assert (code, err) == (0, "") and out == ("prov answers: it lists 1 models (nothing saved)\n"
                                              "The key was checked: the list needs it.\n")
    assert "prov" not in endpoints.load() and "prov" not in keys.stored()
    code, out, err = bench_cli("--url", dash, "endpoint", "add", "prov", "--base", keyed.base_url, stdin=SECRET)
    assert (code, out) == (1, "") and "answered 401 — check the key; nothing saved" in err  # no flag: no key read
    code, out, err = bench_cli("--url", dash, "endpoint", "add", "Prov", "--base", keyed.base_url, "--key-stdin",
                               "--kind", "provider", stdin=SECRET + "\n")
    assert (code, err) == (0, "") and out.startswith("added endpoint prov: it lists 1 models\n")
    assert keys.stored()["prov"] == SECRET and endpoints.load()["prov"].kind == "provider"
    code, out, _ = bench_cli("--url", dash, "endpoints", "--json")
    row = next(r for r in json.loads(out)["endpoints"] if r["name"] == "prov")
    assert code == 0 and row["key_set"] is True and SECRET not in out
    code, out, err = bench_cli("--url", dash, "endpoint", "key", "prov")
    assert (code, out) == (2, "") and err.startswith("bench: no key given: pipe it in with --key-stdin")
    code, _, err = bench_cli("--url", dash, "endpoint", "key", "nope", "--key-stdin", stdin=SECRET)
    assert (code, err) == (1, "bench: no endpoint 'nope'; have: demo, prov\n")
    code, out, err = bench_cli("--url", dash, "endpoint", "key", "prov", "--key-stdin", stdin="sk-not-it-0000000\n")
    assert (code, out) == (1, "") and "check the key" in err and keys.stored()["prov"] == SECRET
    code, out, err = bench_cli("--url", dash, "--json", "endpoint", "key", "prov", "--key-stdin", stdin=SECRET)
    assert (code, err) == (0, "") and json.loads(out) == {"ok": True, "errors": [], "served": 1,
                                                          "note": "The key was checked: the list needs it."}
    code, out, err = bench_cli("--url", dash, "--json", "endpoint", "add", "prov", "--base", keyed.base_url)
    assert code == 1 and json.loads(out)["ok"] is False and "there is already an endpoint named prov" in err
    assert not [p for p in home.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]


def test_endpoint_rm_default_and_limits(dash, bench_cli, keyed):
    """§9.2 endpoint rm (confirmed first; no terminal → 2, nothing removed) and default; `endpoint limits` shows
    and sets the rate limits per connection, keeping those not given."""
    assert bench_cli("--url", dash, "endpoint", "add", "prov", "--base", keyed.base_url, "--key-stdin",
                     stdin=SECRET)[0] == 0
    code, out, err = bench_cli("--url", dash, "endpoint", "rm", "prov", "--with-models")
    assert (code, out) == (2, "") and "retire every model on it" in err and "add --yes" in err
    assert "prov" in endpoints.load()
    code, out, _ = bench_cli("--url", dash, "endpoint", "default", "prov")
    assert (code, out) == (0, "prov is the default endpoint now (was demo)\n") and endpoints.default() == "prov"
    code, _, err = bench_cli("--url", dash, "endpoint", "rm", "demo", "-y")
    assert code == 1 and "model(s) are on it" in err and "demo" in endpoints.load()
    assert bench_cli("--url", dash, "endpoint", "default", "demo")[0] == 0
    code, out, _ = bench_cli("--url", dash, "endpoint", "rm", "prov", "--yes")
    assert (code, out) == (0, "its key stays in the llm key store; `llm keys` lists it\n")
    assert "prov" not in endpoints.load() and keys.stored()["prov"] == SECRET
    code, out, _ = bench_cli("--url", dash, "endpoint", "limits")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["connection", "rpm", "rpd", "tpm", "tpd", "rpmo", "models"]
    assert lines[2].startswith("demo ") and "alpha, beta" in lines[2]
    code, out, _ = bench_cli("--url", dash, "endpoint", "limits", "demo", "--rpm", "30", "--tpd", "1000")
    assert (code, out) == (0, "limits for demo: rpm 30, tpd 1000\n")
    assert bench_cli("--url", dash, "endpoint", "limits", "demo", "--rpm", "none")[1] == "limits for demo: tpd 1000\n"
    assert config("connection-limits.json") == {"demo": {"tpd": 1000}}
    code, out, _ = bench_cli("--url", dash, "endpoint", "limits", "demo", "--json")
    assert code == 0 and json.loads(out)["connections"][0]["limits"] == {"tpd": 1000}
    code, _, err = bench_cli("--url", dash, "endpoint", "limits", "demo", "--rpm", "0")
    assert (code, err) == (1, "bench: rpm must be a positive whole number or blank\n")
    assert bench_cli("--url", dash, "endpoint", "limits", "--rpm", "5")[0] == 2
    assert bench_cli("--url", dash, "endpoint", "limits", "demo", "--rpm", "lots")[0] == 2
    code, _, err = bench_cli("--url", dash, "endpoint", "limits", "nowhere")
    assert (code, err) == (1, "bench: no connection 'nowhere'; known: demo\n")


def test_candidates_and_dismiss(dash, bench_cli, other):
    """§9.2 candidates (filters, `--dismissed`, an unreachable endpoint as a note, none → the server's refusal)
    and dismiss (one row per name, else refused before anything is sent; `--undo`)."""
    assert bench_cli("--url", dash, "endpoint", "add", "other", "--base", other.base_url)[0] == 0
    code, out, err = bench_cli("--url", dash, "candidates")
    lines = out.splitlines()
    assert (code, err) == (0, "") and lines[0].split() == ["served", "endpoint", "group", "new"]
    assert [line.split()[:2] for line in lines[2:]] == [["picker", "demo"], ["blank", "other"], ["delta", "other"],
                                                        ["picker", "other"]]
    code, out, _ = bench_cli("--url", dash, "candidates", "--endpoint", "other", "--find", "PICK", "--json")
    assert [row["key"] for row in json.loads(out)["candidates"]] == ["picker@other"]
    assert bench_cli("--url", dash, "candidates", "--new")[1:] == ("", "nothing new to onboard\n")
    code, _, err = bench_cli("--url", dash, "dismiss", "delta", "picker")
    assert (code, err) == (1, "bench: picker: on several endpoints; add --endpoint\n")
    code, _, err = bench_cli("--url", dash, "dismiss", "nope")
    assert (code, err) == (1, "bench: nope: not among the candidates\n")
    assert config("dismissed.json") == {}
    code, out, _ = bench_cli("--url", dash, "dismiss", "picker", "blank", "--endpoint", "other")
    assert (code, out) == (0, "dismissed: picker@other, blank@other\n")
    code, out, _ = bench_cli("--url", dash, "candidates", "--dismissed")
    assert [line.split()[0] for line in out.splitlines()[2:]] == ["blank", "picker"]
    assert bench_cli("--url", dash, "dismiss", "blank", "--undo")[1] == "brought back: blank@other\n"
    assert set(config("dismissed.json")) == {"picker@other"}
    other.stop()
    code, out, err = bench_cli("--url", dash, "candidates")
    assert code == 0 and err.startswith("note: cannot reach other: ") and "other" not in out
    fileio.write_atomic(paths.file("config", "endpoints.json"), "{}\n")
    code, out, err = bench_cli("--url", dash, "candidates")
    assert (code, out) == (1, "") and "add one first" in err


def test_onboard_queue_from_the_shell(dash, bench_cli, other, monkeypatch):
    """§9.2 onboard: `--ad-hoc` needs `--quick` (2, nothing sent); the queue words; `--wait` follows the real
    onboarding to its end with the steps on stderr; the server's refusals exit 1."""
    monkeypatch.setattr(cli, "ONBOARD_POLL", 0.2)
    assert bench_cli("--url", dash, "endpoint", "add", "other", "--base", other.base_url)[0] == 0
    code, out, err = bench_cli("--url", dash, "onboard", "delta", "--ad-hoc")
    assert (code, out) == (2, "") and "--ad-hoc needs --quick" in err
    assert bench_cli("--url", dash, "onboard", "status") == (0, "", "the onboarding queue is empty\n")
    assert bench_cli("--url", dash, "onboard", "stop") == (1, "", "bench: no onboarding is running\n")
    code, out, err = bench_cli("--url", dash, "onboard", "delta", "--endpoint", "other", "--quick", "--wait")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["served", "endpoint", "state", "as", "note"], err
    assert lines[2].split() == ["delta", "other", "done", "delta"] and "  delta: step " in err
    assert registry.registration("delta").model_name == "delta"
    code, out, _ = bench_cli("--url", dash, "onboard", "status", "--json")
    assert code == 0 and json.loads(out)["items"][0]["state"] == "done"
    code, _, err = bench_cli("--url", dash, "onboard", "alpha")
    assert code == 1 and err == "bench: alpha is already registered as 'alpha'\n"
    assert bench_cli("--url", dash, "onboard", "clear") == (0, "", "the onboarding queue is empty\n")


def test_endpoint_key_prompt_on_a_terminal(dash, bench_cli, keyed, monkeypatch):
    """CLI-6: with stdin a terminal and no `--key-stdin`, the key is asked for with a hidden prompt on stderr."""
    asked = []

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(cli.getpass, "getpass", lambda prompt, stream: asked.append((prompt, stream)) or SECRET)
    monkeypatch.setattr(sys, "stdin", Terminal())
    assert cli.main(["--url", dash, "endpoint", "test", "prov", "--base", keyed.base_url]) == 0
    assert asked == [("API key for prov (hidden, Enter for none): ", sys.stderr)]


def test_completion_of_the_endpoint_commands():
    """Completion offers the new commands, `endpoint`'s actions and an action's options (no server needed)."""
    nowhere = f"http://127.0.0.1:{free_port()}"
    assert bash_complete("bench endpoint ", nowhere) == ["add", "test", "key", "rm", "default", "limits"]
    assert bash_complete("bench endpoint add prov --k", nowhere) == ["--key-stdin", "--kind"]
    assert bash_complete("bench onboard x --", nowhere) == ["--ad-hoc", "--endpoint", "--help", "--json", "--quick",
                                                            "--url", "--wait"]
    assert bash_complete("bench di", nowhere) == ["dismiss"]

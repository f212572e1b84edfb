"""The first hour from the command line (issue 16 item 1): init (IN-1..6), onboard (OB-1..12), perf (PF-1..7),
a collection, check (CK-1, CK-2) — each script run as the command a user types, against the local upstream."""

import csv
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from benchwarmers.core import paths
from benchwarmers.models import registry

SECRET = "sk-first-hour-0123456789"


def script(folder, name):
    """A runner as a user types it, `python -m benchwarmers.<folder>.<name>`: its argv."""
    return paths.module_command(f"{folder}.{name.removesuffix('.py')}")


def run(path, *args, stdin=None, env=None):
    # a new session has no controlling terminal, so getpass reads the key from stdin as a piping script would
    return subprocess.run([*path, *args], capture_output=True, text=True, input=stdin,
                          start_new_session=True, env=env, timeout=120)


def init(*args, stdin=None):
    return run(script("scripts", "init.py"), *args, stdin=stdin)


@pytest.fixture
def keyed():
    from benchwarmers.demo.demo import Upstream
    from conftest import TEST_MODELS

    with Upstream(models={name: dict(spec) for name, spec in TEST_MODELS.items()}, key=SECRET) as up:
        yield up


def test_in1_in2_in3_makes_the_folder_and_changes_nothing_the_second_time(home, tmp_path):
    first = init(str(home))
    lines = first.stdout.splitlines()
    assert first.returncode == 0, first.stderr
    assert lines[0].startswith(f"Data folder: {home.resolve()} (") and "nothing overwritten" in lines[0]
    assert lines[1] == "BENCHWARMERS_HOME already names it."
    assert all((home / part).is_dir() for part in paths.LAYOUT)
    assert json.loads((home / "config" / "gateway.json").read_text())["max_calls"] == 5
    (home / "config" / "gateway.json").write_text('{"max_calls": 3}\n')
    again = init(str(home))
    assert again.stdout.startswith(f"Data folder: {home.resolve()} (0 starter file(s) copied")
    assert json.loads((home / "config" / "gateway.json").read_text()) == {"max_calls": 3}
    other = init(str(tmp_path / "elsewhere"))
    assert "which wins: set it to" in other.stdout.splitlines()[1]
    assert (tmp_path / "elsewhere" / "config" / "gateway.json").exists()
    assert "Next: add an endpoint: python -m benchwarmers.scripts.init --endpoint NAME BASE_URL --key" in other.stdout


def test_in3_in6_under_the_launcher_no_pointer_and_the_dashboard_starts_only_on_a_first_run(home, tmp_path):
    """`bench init DIR`: the launcher reads no pointer file (it always sets BENCHWARMERS_HOME, LN-7), so none is
    written and the second line says what to set; a BENCHWARMERS_HOME the launcher defaulted names nothing.
    "The dashboard starts now" is said only when the launcher's first run made the folder."""
    pointer = paths.POINTER.read_text() if paths.POINTER.exists() else None
    launched = {**os.environ, "BENCHWARMERS_LAUNCHER": "pip", paths.LAUNCHER_DEFAULT: "1"}
    elsewhere = tmp_path / "elsewhere"
    done = run(script("scripts", "init"), str(elsewhere), env=launched)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    assert lines[1] == f"Set BENCHWARMERS_HOME={elsewhere.resolve()} for the bench to use this folder."
    assert (paths.POINTER.read_text() if paths.POINTER.exists() else None) == pointer
    assert lines[-1].startswith("Next: add an endpoint: ") and "(bench serve)" in lines[-1]
    first = run(script("scripts", "init"), str(home), env={**launched, paths.FIRST_RUN: "1"})
    assert first.stdout.splitlines()[-1].startswith("Next: the dashboard starts now at http://localhost:")


def test_in4_key_asked_unechoed_stored_in_llm_and_never_in_the_data_folder(home, llmdir, keyed):
    done = init(str(home), "--endpoint", "myprov", keyed.base_url, "--key", stdin=SECRET + "\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "API key for myprov: " in done.stderr
    assert f"Endpoint myprov added: it lists {len(keyed.listing())} model(s)." in done.stdout
    assert "The key was checked: the list needs it." in done.stdout
    assert SECRET not in done.stdout + done.stderr
    assert json.loads((llmdir / "keys.json").read_text())["myprov"] == SECRET
    assert not [p for p in home.rglob("*") if p.is_file() and SECRET in p.read_text(errors="replace")]
    assert json.loads((home / "config" / "endpoints.json").read_text())["myprov"]["key"] == "myprov"
    assert "Next: onboard a model it serves: python -m benchwarmers.scripts.onboard SERVED_NAME" in done.stdout.splitlines()[-1]


def test_in4_in5_refusals(home, keyed):
    wrong = init(str(home), "--endpoint", "myprov", keyed.base_url, "--key", stdin="sk-wrong-key-000000\n")
    assert wrong.returncode == 1
    assert f"Endpoint not added: {keyed.base_url}/models answered 401 — check the key; nothing saved." in wrong.stdout
    assert not (home / "config" / "endpoints.json").exists()
    nowhere = init(str(home), "--endpoint", "local", "http://127.0.0.1:9/v1")
    assert nowhere.returncode == 1 and "could not list http://127.0.0.1:9/v1/models" in nowhere.stdout
    bad = init(str(home), "--endpoint", "Bad Name", "ftp://x")
    assert "name: 2-32 lower-case letters" in bad.stdout and "base URL must start http://" in bad.stdout
    lone = init(str(home), "--key")
    assert lone.returncode == 2 and "--key goes with --endpoint" in lone.stderr


def test_in4_a_stored_key_is_used_without_asking(home, keyed):
    from benchwarmers.core import keys

    keys.set_key("myprov", SECRET)
    done = init(str(home), "--endpoint", "myprov", keyed.base_url)
    assert done.returncode == 0 and "API key" not in done.stderr
    assert "Endpoint myprov added" in done.stdout


def onboard(*args, env=None):
    return run(script("scripts", "onboard.py"), *args, env=env)


@pytest.fixture
def endpoint(home, upstream):
    assert init(str(home), "--endpoint", "local", upstream.base_url).returncode == 0
    return upstream


def test_ob_onboard_probe_and_the_first_panel(home, llmdir, endpoint):
    """OB-4, OB-6, OB-7, OB-9, OB-11 (the starter tasks init copied), OB-12; PF-5's row; then a collection and a panel."""
    done = onboard("alpha")
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    steps = [line.strip()[:5] for line in out.splitlines() if line.strip().startswith("[")]
    assert steps == ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]"]
    assert out.startswith("onboarding alpha from local  ->  alias alpha")
    assert "[5/5] running the internal suite..." in out
    assert "    ## claim-label-prefers-regex — " in out and "alpha" in out.split("[5/5]")[1]
    assert (home / "suite" / "tasks" / "list-refusal-markers" / "output" / "alpha.md").exists()
    assert "Where it lands:" in out and "wrote " in out
    assert registry.registration("alpha").model_name == "alpha"
    assert (llmdir / "extra-openai-models.yaml").read_text() == registry.path().read_text()
    rows = list(csv.DictReader(open(home / "perf" / "history.csv", encoding="utf-8")))
    assert [(r["model"], r["prompt"], r["answered"]) for r in rows] == [("alpha", "tiny", "2"), ("alpha", "large", "2")]
    note = next((home / "runs").glob("onboard-*.md")).read_text()
    assert "## Onboarded `alpha` (alpha)" in note
    again = onboard("alpha", "--skip-suite")
    assert "[2/5] already registered — leaving the yaml alone" in again.stdout
    assert "[5/5] suite skipped by request" in again.stdout
    made = run(script("scripts", "collection.py"), "add", "first", "alpha", "--description", "my first panel")
    assert made.returncode == 0 and "saved bench/first: alpha" in made.stdout
    from benchwarmers.server import gateway as gateway_module
    import urllib.request

    server = gateway_module.serve("127.0.0.1", 0)
    try:
        body = json.dumps({"model": "bench/first", "messages": [{"role": "user", "content": "Is x = x + 1 right?"}]})
        request = urllib.request.Request(f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions",
                                         body.encode(), {"Content-Type": "application/json"})
        reply = json.loads(urllib.request.urlopen(request, timeout=30).read())
    finally:
        server.shutdown()
        server.server_close()
    assert endpoint.answer_for("alpha", "Is x = x + 1 right?") in reply["choices"][0]["message"]["content"]


def test_ob10_a_model_that_does_not_answer_is_kept_with_its_issue(home, endpoint):
    done = onboard("blank", "--skip-suite", env={**os.environ, "BENCH_ONBOARD_LOG": "runs/onboard-x.log"})
    assert done.returncode == 0
    assert "STOPPING: blank did not answer the availability probe" in done.stdout
    assert "tiny: empty —" in done.stdout
    issue = json.loads((home / "metrics" / "onboard-issues.json").read_text())["blank"]
    assert issue["step"] == "availability probe" and issue["failure"] == "empty"
    assert issue["log"] == "runs/onboard-x.log" and issue["endpoint"] == "local"
    assert "blank" in registry.registrations()


def test_ob2_ob4_alias_rule_and_not_served(home, endpoint):
    registry.add_registration("alpha", "other/alpha", "local")
    taken = onboard("alpha", "--skip-suite", "--ad-hoc")
    assert "->  alias alpha-alt" in taken.stdout
    assert json.loads((home / "config" / "model-roles.json").read_text())["ad_hoc"] == ["alpha-alt"]
    missing = onboard("vendor/alpha-9")
    assert missing.returncode == 1 and "vendor/alpha-9 is not served." in missing.stderr
    assert "similar: alpha" in missing.stderr
    nothing = subprocess.run([*script("scripts", "onboard.py"), "alpha", "--endpoint", "nope"],
                             capture_output=True, text=True)
    assert nothing.returncode == 1 and "no endpoint 'nope'; known: local" in nothing.stderr


def test_ob2_the_same_served_name_from_a_second_endpoint_gets_its_own_alias(home, endpoint):
    """Issue 30 item 4: a second endpoint serving a registered name is onboarded under `<alias>-<endpoint>`,
    with why; an alias taken by another model on the way is refused naming both endpoints, with no traceback."""
    from benchwarmers.core import fileio
    from benchwarmers.models import endpoints
    from benchwarmers.demo.demo import Upstream

    with Upstream(models={"alpha": {"answer": "the second alpha"}}) as second:
        fileio.update(endpoints.path(), lambda data: data.__setitem__("second", {"base": second.base_url, "key": ""}))
        assert onboard("alpha", "--skip-suite").returncode == 0
        twin = onboard("alpha", "--endpoint", "second", "--skip-suite")
        assert twin.returncode == 0, twin.stdout + twin.stderr
        assert "->  alias alpha-second" in twin.stdout
        assert "(alpha is already registered as alpha from local; this one is told apart by its endpoint)" in twin.stdout
        assert "[2/5] registered as alpha-second" in twin.stdout
        assert {a: registry.endpoint_of(a) for a in ("alpha", "alpha-second")} == {"alpha": "local",
                                                                                    "alpha-second": "second"}
        assert "[2/5] already registered" in onboard("alpha", "--endpoint", "second", "--skip-suite").stdout

        registry.remove_registration("alpha-second")
        registry.add_registration("alpha-second", "beta", "local")
        taken = onboard("alpha", "--endpoint", "second", "--skip-suite")
        assert taken.returncode == 1 and "Traceback" not in taken.stderr
        assert ("STOPPING: cannot register alpha from second as alpha-second: that alias is already registered "
                "for beta from local.") in taken.stderr


def test_pf_percentiles_history_header_and_trend(home, bench):
    """PF-4 nearest rank, PF-6 header rewrite, PF-7 counts token and trend; PF-2's one sample for `:free`."""
    from benchwarmers.perf import run as perf

    assert perf.percentile([], 0.5) == 0.0
    # round(2.5) is 2 (banker's): index 2 of six values, never the interpolated 3.5
    assert perf.percentile([6, 5, 4, 3, 2, 1], 0.5) == 3 and perf.percentile([1, 2, 3, 4, 5], 0.95) == 5
    assert len(perf.PROMPTS["large"]) == 18158 and perf.PROMPTS["tiny"] == "Reply with exactly one word: ready"
    history = home / "perf" / "history.csv"
    history.write_text("timestamp,model,prompt,n,p50_s,answered\n2026-01-02T03:04:05,alpha,tiny,1,9.5,1\n")
    registry.add_registration("gamma-free", "gamma:free", "demo")
    bench.set_model("gamma:free", answer="ready")
    done = run(script("perf", "run.py"), "--model", "alpha", "--model", "gamma-free", "-n", "2", "--tiny-only")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(history, encoding="utf-8")))
    assert list(rows[0]) == list(perf.COLUMNS)
    assert rows[0]["p50_s"] == "9.5" and rows[0]["tokens_per_s"] == ""
    assert [(r["model"], r["n"]) for r in rows[1:]] == [("alpha", "2"), ("gamma-free", "1")]
    assert "2a/0r/0e/0t  (-" in done.stdout and "vs 2026-01-02)" in done.stdout
    unknown = run(script("perf", "run.py"), "--model", "nobody")
    assert unknown.returncode == 1 and "not registered: nobody" in unknown.stderr


def test_collection_command_checks_everything_before_writing(home, bench):
    collection = script("scripts", "collection.py")
    bad = run(collection, "add", "Bad Name", "alpha", "nobody", "beta", "gamma", "slow", "seer")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and bad.stderr.startswith("collection not saved:")
    for told in ("name", "at most 5 members", "not chat models on the bench: nobody"):
        assert told in bad.stderr
    assert not (home / "config" / "collections.json").exists()
    assert run(collection, "add", "bench/pair", "alpha", "beta", "--reply", "merged").returncode == 0
    saved = json.loads((home / "config" / "collections.json").read_text())["pair"]
    assert saved["members"] == ["alpha", "beta"] and saved["reply"] == "merged"
    assert "bench/pair  alpha, beta" in run(collection, "list").stdout
    assert run(collection, "remove", "pair").returncode == 0
    assert run(collection, "remove", "pair").returncode == 1


def test_ck1_ck2_check_runs_each_check_in_its_own_process(home):
    done = run(script("scripts", "check.py"), "--quick", "--fixtures", "test_layers", "test_llm_backend", "test_nope")
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout
    assert lines[0].startswith("ok   test_layers  (")
    assert lines[1] == "skip  test_llm_backend  (--quick: the real llm CLI)"
    assert lines[2] == "skip  test_nope  (not in this checkout)"
    assert lines[-1] == "all checks pass"


def readme_blocks():
    """Getting started's "Use a real provider" commands (docs/getting-started.md), block by block: each fenced
    shell block's lines."""
    text = (paths.CODE / "docs" / "getting-started.md").read_text(encoding="utf-8")
    section = text[text.index("## Use a real provider"):text.index("### Sign in instead of copying a key")]
    return [block.strip().splitlines() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_readme_real_provider_commands_answer_a_panel(tmp_path, monkeypatch):
    """Issue 16 item 3: each provider's commands, as the docs type them, the local upstream's URL in the provider's
    place (the README's four are the first block's)."""
    import shlex
    from benchwarmers.demo.demo import Upstream

    blocks = readme_blocks()
    providers, curl = blocks[:-1], blocks[-1]
    assert len(providers) == 3 and all(len(b) == 4 for b in providers) and curl[0].startswith("curl ")
    readme = (paths.CODE / "README.md").read_text(encoding="utf-8")
    four = readme[readme.index("## A real provider in four commands"):readme.index("## Documentation")]
    assert re.findall(r"```sh\n(.*?)```", four, re.S)[0].strip().splitlines() == providers[0]
    served = [b[1].split()[3] for b in providers]
    with Upstream(models={name: {"answer": f"{name} says: no, it is fine."} for name in served}) as up:
        for i, block in enumerate(providers):
            monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / f"data{i}"))
            monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
            port = free_port()
            monkeypatch.setenv("BENCH_GATEWAY_PORT", str(port))
            for command in block[:3]:
                command = re.sub(r"https?://\S+/v1", up.base_url, command)
                done = subprocess.run([sys.executable if w == "python" else w for w in shlex.split(command)],
                                      capture_output=True, text=True, input="sk-readme-0123456789\n",
                                      start_new_session=True, cwd=paths.CODE, timeout=120)
                assert done.returncode == 0, command + "\n" + done.stdout + done.stderr
            assert block[3] == "python gateway.py"
            gateway = subprocess.Popen([sys.executable, "gateway.py"], cwd=paths.CODE, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True)
            try:
                assert gateway.stdout.readline().startswith(f"bench gateway on http://127.0.0.1:{port}/v1")
                asked = subprocess.run(shlex.split(curl[0].replace("8123", str(port))), capture_output=True,
                                       text=True, timeout=60)
            finally:
                gateway.terminate()
                gateway.wait(30)
            content = json.loads(asked.stdout)["choices"][0]["message"]["content"]
            assert f"{served[i]} says: no, it is fine." in content


def test_dead_ends_name_the_next_step(home):
    """Issue 16 item 4: each message names something that exists, and what to run next."""
    def module(*args):
        return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=paths.CODE)

    fresh = run(script("scripts", "sync_config.py"), "--check")
    assert fresh.returncode == 1 and "python -m benchwarmers.scripts.onboard SERVED_NAME" in fresh.stdout
    keys_listed = module("benchwarmers.server.gatekeys", "list")
    assert keys_listed.stdout == "no gateway keys yet: python -m benchwarmers.server.gatekeys create NAME\n"
    told = module("benchwarmers.core.paths", "--help")
    assert told.returncode == 0 and "why it was chosen" in told.stdout
    none = module("benchwarmers.models.endpoints")
    assert none.returncode == 1 and "python -m benchwarmers.scripts.init --endpoint NAME BASE_URL --key" in none.stderr
    assert "the dashboard's Endpoints page" in none.stderr
    for name in ("init", "onboard", "collection", "check"):
        assert importlib.util.find_spec(f"benchwarmers.scripts.{name}")  # every command the messages name is there


def test_dead_ends_a_verdict_without_call_is_400_naming_the_field(gateway):
    """The first-hour issue, item 4: a verdict without `call` is the caller's slip (400), not an unknown call."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{gateway}/bench/verdict", json.dumps({"useful": True}).encode(),
                                     {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    assert json.loads(refused.value.read())["error"]["message"].startswith('"call" is required')


def test_dead_ends_a_taken_port_is_one_sentence_and_exit_1(port, home):
    """The first-hour issue, item 4: a second gateway on a used port says so and how to choose another."""
    env = {**os.environ, "BENCH_GATEWAY_PORT": str(port)}
    done = subprocess.run([sys.executable, str(paths.CODE / "gateway.py")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"port {port} on 127.0.0.1 is taken" in done.stderr and "--port N or BENCH_GATEWAY_PORT" in done.stderr
    env = {**os.environ, "BENCH_PORT": str(port)}
    done = subprocess.run([sys.executable, str(paths.CODE / "serve.py"), "--demo"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and "--port N or BENCH_PORT" in done.stderr and "Traceback" not in done.stderr

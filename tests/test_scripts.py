"""The maintenance scripts (suite-cli-mcp.md §3.4, §3.5, §3.9, §3.10) and `metrics/models/alerts.py` (models.md AL-6), run as a user types them against the local
upstream; auto-retire's rules (AR-7) checked on made-up evidence."""

import contextlib
import datetime
import http.server
import json
import os
import socket
import subprocess
import threading

from benchwarmers.core import fileio, paths
from benchwarmers.models import registry
from benchwarmers.demo import demo
from benchwarmers.admin import retire
from benchwarmers.scripts import notice


def script(name, *args):
    return subprocess.run([*paths.module_command("scripts." + name.removesuffix(".py")), *args],
                          capture_output=True, text=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def run(*args):
    return script("list_served.py", *args)


def test_ls1_served_models_marked_registered_or_missing(home):
    with demo.Upstream(models={"alpha": {"answer": "a"}, "beta-x": {"answer": "b"}, "Beta-y": {"answer": "c"}}) as up:
        demo.register(up, aliases={"alpha": "alpha"})
        all_of = run()
        some = run("BETA")
    assert all_of.returncode == 0, all_of.stderr
    assert all_of.stdout.splitlines()[:3] == ["[ MISSING  ] Beta-y", "[registered] alpha", "[ MISSING  ] beta-x"]
    assert "3 shown of 3 served; 2 unregistered" in all_of.stdout and "scripts.onboard" in all_of.stdout
    assert some.stdout.splitlines()[:2] == ["[ MISSING  ] Beta-y", "[ MISSING  ] beta-x"]
    assert "2 shown of 3 served; 2 unregistered" in some.stdout


def test_ls1_unreachable_and_no_endpoint(home):
    none = run()
    assert none.returncode == 1 and "no endpoints configured" in none.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    fileio.write_atomic(paths.file("config", "endpoints.json"),
                        f'{{"local": {{"base": "http://127.0.0.1:{closed}/v1", "default": true}}}}\n')
    gone = run()
    assert gone.returncode == 1
    assert gone.stderr.startswith(f"could not reach http://127.0.0.1:{closed}/v1: ")


# -- check_deprecations.py and retire.py ---------------------------------------------------------------

def snapshot():
    return json.loads(paths.file("config", "served-snapshot.json").read_text(encoding="utf-8"))


def perf(*rows):
    """Append perf rows `(alias, date, answered, failure, detail)` as perf/run.py writes them."""
    where = paths.file("perf", "history.csv")
    where.parent.mkdir(parents=True, exist_ok=True)
    lines = [] if where.exists() else ["timestamp,model,prompt,n,answered,failure,detail"]
    lines += [f"{day}T05:00:00+00:00,{alias},tiny,1,{int(ok)},{failure},{detail}" for alias, day, ok, failure, detail
              in rows]
    with open(where, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def test_dp_gone_model_counts_down_then_is_retired_with_its_reason(home):
    today = datetime.date.today().isoformat()
    with demo.Upstream(models={"alpha": {"answer": "a"}, "beta": {"answer": "b"}, "extra": {"answer": "c"}}) as up:
        demo.register(up, aliases={"alpha": "alpha", "beta": "beta"})
        first = script("check_deprecations.py")
        assert first.returncode == 0, first.stdout + first.stderr
        assert "3 served, 2 registered, 1 served-but-unregistered" in first.stdout
        assert "no registered model has gone missing" in first.stdout
        assert snapshot() == {"updated": today, "last_seen": {"alpha": today, "beta": today, "extra": today},
                              "first_missing": {}}
        up.set_model("beta", fail="404")  # the provider stops listing it
        up.set_model("extra", fail="404")
        dry = script("check_deprecations.py", "--dry-run")
        assert dry.returncode == 1 and "AUTO-RETIRE (dry run):" in dry.stdout
        assert snapshot()["first_missing"] == {} and not paths.file("metrics", "alerts.json").exists()  # DP-3, DP-6
        second = script("check_deprecations.py")
        assert second.returncode == 1, second.stdout  # DP-8: a registered model gone
        assert f"  beta (beta): last seen {today}, missing 0d (could still be a blip)" in second.stdout
        assert "  beta retires in 3d unless it answers — not served by demo since" in second.stdout
        assert "Unregistered models that disappeared (info):\n  extra" in second.stdout
        assert snapshot()["first_missing"] == {"beta": today, "extra": today}
        found = json.loads(paths.file("metrics", "alerts.json").read_text(encoding="utf-8"))
        assert list(found) == ["model:pending:beta"]  # counting down: no model:gone alert as well (DP-6)
        assert found["model:pending:beta"]["kind"] == "retiring" and found["model:pending:beta"]["alias"] == "beta"
        quiet = script("check_deprecations.py", "--quiet")
        assert "extra" not in quiet.stdout and "Registered but no longer served:" in quiet.stdout
        three_days_ago = (datetime.date.today() - datetime.timedelta(days=3)).isoformat()
        snap = snapshot()
        snap["first_missing"]["beta"] = three_days_ago
        fileio.write_atomic(paths.file("config", "served-snapshot.json"), json.dumps(snap))
        third = script("check_deprecations.py", "--quiet")
    assert third.returncode == 0, third.stdout + third.stderr  # retired: no longer a registered model gone
    assert f"  retired beta: not served by demo since {three_days_ago}" in third.stdout
    gone = json.loads(paths.file("config", "retired.json").read_text(encoding="utf-8"))["beta"]
    assert gone["by"] == "auto" and gone["why"] == f"auto: not served by demo since {three_days_ago}"
    assert "beta" not in registry.registrations() and "alpha" in registry.registrations()
    assert json.loads(paths.file("metrics", "alerts.json").read_text(encoding="utf-8")) == {}
    assert '"field": "removed"' in paths.file("config", "changes.jsonl").read_text(encoding="utf-8")


def test_dp_structural_failure_is_confirmed_then_retired_and_an_answer_holds_it(home):
    today = datetime.date.today().isoformat()
    models = {"ghost": {"fail": "404", "listed": True}, "flaky": {"answer": "ready"}, "fine": {"answer": "y"}}
    with demo.Upstream(models=models) as up:
        demo.register(up, aliases={"ghost": "ghost", "flaky": "flaky", "fine": "fine", "typo": "no-such-model"})
        perf(("fine", today, True, "", ""),  # one model on the connection answers: the guard does not hold (AR-4)
             ("ghost", today, False, "structural", "Model not found"),
             ("flaky", today, False, "paywalled", "use this slug instead"))
        dry = script("auto_retire.py", "--dry-run")
        assert "  would retire ghost: structural: Model not found (would confirm with one call)" in dry.stdout
        assert up.requests == []  # a dry run calls nothing
        done = script("check_deprecations.py")
        raised = json.loads(paths.file("metrics", "alerts.json").read_text(encoding="utf-8"))
        registry.remove_registration("typo")  # mended by hand: its alert is swept on the next run
        again = script("check_deprecations.py")
    assert done.returncode == 1, done.stdout + done.stderr  # flaky is paywalled, typo never served
    assert (f"  retired ghost: structural: Model not found — confirmed {today}: structural:" in done.stdout)
    assert "  flaky retires in 1d unless it answers — failed the 5am probe, answered the confirmation call" in done.stdout
    assert "Free tier retired behind a paid slug:\n  flaky (flaky)" in done.stdout
    assert "Registered but never served:\n  typo (no-such-model)" in done.stdout
    why = json.loads(paths.file("config", "retired.json").read_text(encoding="utf-8"))["ghost"]["why"]
    assert why.startswith(f"auto: structural: Model not found — confirmed {today}: structural: ")
    assert sorted(raised) == ["model:never-served:no-such-model", "model:pending:flaky"]
    assert raised["model:never-served:no-such-model"]["kind"] == "registration"
    assert "typo" not in again.stdout
    found = json.loads(paths.file("metrics", "alerts.json").read_text(encoding="utf-8"))
    assert sorted(found) == ["model:pending:flaky"]  # no paywalled alert while counting down; never-served swept
    assert found["model:pending:flaky"]["message"] == "flaky retires in 1 day unless it answers"


def test_dp_no_endpoint_and_unreachable_default_write_nothing(home):
    none = script("check_deprecations.py")
    assert none.returncode == 1 and "no endpoints configured" in none.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    fileio.write_atomic(paths.file("config", "endpoints.json"),
                        f'{{"local": {{"base": "http://127.0.0.1:{closed}/v1", "default": true}}}}\n')
    out = script("check_deprecations.py")
    assert out.returncode == 2 and out.stdout.startswith(f"cannot reach http://127.0.0.1:{closed}/v1: ")
    assert "no snapshot written" in out.stdout and not paths.file("config", "served-snapshot.json").exists()
    assert retire.evidence() == ([], {}, {}) and retire.run(dry_run=True) == ([], set())  # DATA-5


TODAY = datetime.date(2026, 10, 15)


def ago(days):
    return TODAY - datetime.timedelta(days=days)


def decided(rows, last_answer=None, restored=None, missing=None, where="demo", renamed=""):
    rows = [("m", ago(d), ok, failure, detail) for d, ok, failure, detail in rows]
    info = retire.state("m", rows, last_answer or {}, restored or {}, missing)
    return retire.decide("m", info, TODAY, where, renamed)


def test_ar7_rule_checks():
    assert decided([(2, False, "other", "boom"), (1, False, "other", "boom"), (0, False, "other", "boom")])[:2] == \
        ("candidate", 0)
    assert decided([(0, False, "paywalled", "use this slug instead")])[0] == "confirm"
    backstop = decided([(8, False, "capacity", "x"), (5, False, "capacity", "x"), (0, False, "capacity", "x")])
    assert backstop[0] == "candidate" and backstop[2].startswith("no answer for 8 days — capacity")
    assert decided([], missing=ago(3)) == ("retire", 0, f"not served by demo since {ago(3)}")
    assert decided([(2, False, "timeout", ""), (0, False, "capacity", "429")]) == ("pending", 5, "capacity: 429")
    restored = decided([(6, False, "other", "e"), (5, False, "other", "e"), (4, False, "other", "e")],
                       restored={"m": ago(2)})
    assert restored[0] == "pending"
    suite_yesterday = decided([(8, False, "capacity", "x"), (5, False, "capacity", "x"), (0, False, "capacity", "x")],
                              last_answer={"m": ago(1)})
    assert suite_yesterday[0] == "pending"
    quota = [(8, False, "capacity", "free-models-per-day"), (5, False, "capacity", "free-models-per-day"),
             (0, False, "capacity", "free-models-per-day")]
    assert decided(quota) == (None, 0, "")
    assert decided([(8, False, "signin", ""), (5, False, "signin", ""), (0, False, "signin", "")]) == (None, 0, "")
    hub = decided([], missing=ago(4), where="Open WebUI", renamed="llm7.m")
    assert hub == ("pending", 1, "served as llm7.m now — run reprefix, not a retirement")


def test_ar4_one_connection_all_down_is_held_not_retired():
    states, decisions = {}, {}
    for alias in ("a", "b"):
        rows = [(alias, TODAY, False, "entitlement", "not authorized")]
        states[alias] = retire.state(alias, rows, {}, {}, None)
        decisions[alias] = retire.decide(alias, states[alias], TODAY, "demo")
    assert retire.held(decisions, states, {"a": "groq", "b": "groq"}) == {"groq": ["a", "b"]}
    assert retire.held(decisions, states, {"a": "?", "b": "?"}) == {}  # untagged: never grouped
    states["c"] = retire.state("c", [("c", TODAY, True, "", "")], {}, {}, None)
    assert retire.held(decisions, states, {"a": "groq", "b": "groq", "c": "groq"}) == {}


def test_dp2_an_unreachable_other_endpoint_leaves_its_models_as_they_were_and_alerting_never_fails_a_run(home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    with demo.Upstream(models={"alpha": {"answer": "a"}}) as up:
        demo.register(up)
        fileio.update(paths.file("config", "endpoints.json"),
                      lambda d: d.__setitem__("far", {"base": f"http://127.0.0.1:{closed}/v1"}))
        registry.add_registration("remote", "r1", "far")
        fileio.write_atomic(paths.file("metrics", "alerts.json"), "{broken\n")
        out = script("check_deprecations.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "could not update alerts: " in out.stdout  # DP-6: alerting is never fatal, and never over a broken file
    assert paths.file("metrics", "alerts.json").read_text(encoding="utf-8") == "{broken\n"
    assert out.stdout.startswith("cannot reach far (ConnectionRefusedError); its models are left as they were")
    assert sorted(snapshot()["last_seen"]) == ["alpha", "r1@far"]  # DP-1: bare on the default, served@endpoint else


def test_al6_alerts_listed_or_nothing_wrong(home):
    from benchwarmers.models import alerts

    def shown():
        return subprocess.run(paths.module_command("models.alerts"), capture_output=True,
                              text=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"}).stdout

    assert shown() == "Nothing wrong.\n"
    alerts.raise_alert("model:pending:m", "retiring", "m retires in 2 days unless it answers", "retry it", alias="m")
    assert "[retiring] model:pending:m (since today): m retires in 2 days unless it answers\n    retry it" in shown()
    assert alerts.sweep("model:", {"model:pending:m"}) == [] and alerts.clear("model:pending:m") is True
    assert alerts.active() == {} and alerts.clear("model:pending:m") is False


def test_nt1_notice_is_current_and_rendered_from_what_ships(tmp_path):
    check = script("notice.py", "--check")
    assert check.returncode == 0 and check.stdout == "current\n", check.stdout  # ST-1: no task section
    shipped = (paths.CODE / "NOTICE").read_text(encoding="utf-8")
    assert "  marked (https://github.com/markedjs/marked) 18.3.0, MIT (LICENSE-marked.md): marked.umd.js\n" in shipped
    assert "every review task was written for this project" in shipped  # issue 31: the vendored browser code only
    task = tmp_path / "suite" / "starter" / "t1"
    task.mkdir(parents=True)
    (task / "task.json").write_text(json.dumps({"upstream": "acme/lib", "license": "MIT",
                                                "source_url": "https://example.invalid/acme/lib/x.py"}))
    fonts = tmp_path / "ui" / "fonts"
    fonts.mkdir(parents=True)
    (fonts / "Inter.woff2").write_bytes(b"font")
    (fonts / "OFL.txt").write_text("SIL Open Font License 1.1")
    assert notice.main(["--check"], root=tmp_path) == 1
    assert notice.main([], root=tmp_path) == 0
    text = (tmp_path / "NOTICE").read_text(encoding="utf-8")
    assert "acme/lib (MIT)\n  https://example.invalid/acme/lib/x.py" in text
    assert "Fonts in ui/fonts: Inter.woff2\n\nSIL Open Font License 1.1" in text
    (tmp_path / "NOTICE").write_bytes(text.replace("\n", "\r\n").encode())
    assert notice.main(["--check"], root=tmp_path) == 0  # CRLF-normalised


# -- reprefix.py --------------------------------------------------------------------------------------------

def test_rp_registrations_follow_a_new_connection_prefix_keeping_their_aliases(home):
    none = script("reprefix.py", "llm7", "--prefix", "llm7.")
    assert none.returncode == 1 and "only Open WebUI prefixes" in none.stderr  # RP-1
    fileio.write_atomic(paths.file("config", "endpoints.json"),
                        '{"owui": {"base": "http://127.0.0.1:9/api", "kind": "hub", "hub": "openwebui"}}\n')
    for alias, served in (("cod", "codestral-latest"), ("kept", "other-model"), ("done", "llm7.x"),
                          ("odd", "m/with:colon")):
        registry.add_registration(alias, served, "owui")
    untagged = script("reprefix.py", "llm7", "--prefix", "llm7.")
    assert untagged.returncode == 1 and "run python -m benchwarmers.scripts.provider_tags first" in untagged.stderr  # §13.15
    fileio.write_atomic(paths.file("config", "provider-tags.json"), json.dumps(
        {"llm7.codestral-latest": "llm7", "other-model": "groq", "llm7.x": "llm7", "llm7.m/with:colon": "llm7"}))
    fileio.write_atomic(paths.file("config", "served-snapshot.json"), json.dumps(
        {"updated": "2026-10-15", "last_seen": {"codestral-latest": "2026-10-11", "other-model": "2026-10-15"},
         "first_missing": {"codestral-latest": "2026-10-12"}}))
    before = registry.path().read_text(encoding="utf-8")
    dry = script("reprefix.py", "llm7", "--prefix", "llm7.")
    assert dry.returncode == 0 and registry.path().read_text(encoding="utf-8") == before
    assert dry.stdout.splitlines()[:2] == ["  cod: codestral-latest -> llm7.codestral-latest",
                                           "  odd: m/with:colon -> llm7.m/with:colon"]
    applied = script("reprefix.py", "llm7", "--prefix", "llm7.", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert "repointed 2 registration(s); moved 1 served-snapshot entry" in applied.stdout
    assert "scripts.sync_config" in applied.stdout and "scripts.provider_tags" in applied.stdout
    text = registry.path().read_text(encoding="utf-8")
    assert "  model_name: llm7.codestral-latest\n" in text and '  model_name: "llm7.m/with:colon"\n' in text
    assert registry.names() == {
        "cod": "llm7.codestral-latest", "kept": "other-model", "done": "llm7.x", "odd": "llm7.m/with:colon"}
    assert snapshot() == {"updated": "2026-10-15", "first_missing": {},
                          "last_seen": {"llm7.codestral-latest": "2026-10-11", "other-model": "2026-10-15"}}
    again = script("reprefix.py", "llm7", "--prefix", "llm7.")
    assert again.stdout.startswith("nothing to do")


# -- provider_tags.py ---------------------------------------------------------------------------------------

@contextlib.contextmanager
def fake_openwebui(config, models):
    """An Open WebUI stand-in on 127.0.0.1: `/openai/config` and `/api/models`, and the auth headers it saw."""
    seen = []

    class Hub(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            body = {"/openai/config": config, "/api/models": {"data": models}}.get(self.path)
            blob = json.dumps(body).encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    finally:
        srv.shutdown()
        srv.server_close()


def test_pt_tags_by_connection_from_the_hub_never_its_keys(home):
    alone = script("provider_tags.py")
    assert alone.returncode == 0 and "nothing to tag" in alone.stdout  # PT-1
    config = {"OPENAI_API_BASE_URLS": ["https://openrouter.ai/api/v1", "https://api.groq.com/openai/v1",
                                       "http://192.168.1.20:4000/v1", "http://10.0.0.5:8000/v1",
                                       "https://llm.example.invalid/v1"],
              "OPENAI_API_KEYS": ["sk-or-SECRET", "gsk_SECRET", "", "", ""]}
    models = [{"id": "mistralai/m:free", "urlIdx": 0, "openai": {"owned_by": "mistralai"}},
              {"id": "llama-70b", "urlIdx": 1, "openai": {"owned_by": "openai"}},
              {"id": "qwen", "urlIdx": 2}, {"id": "phi", "urlIdx": 3}, {"id": "own", "urlIdx": 4},
              {"id": "lost", "urlIdx": 9, "openai": {"owned_by": "x"}}, {"id": "gemma3", "connection_type": "local"}]
    fileio.write_atomic(paths.file("config", "connections.json"), '{"hosts": {"192.168.1.20": "lan-box"}}\n')
    with fake_openwebui(config, models) as (root, seen):
        fileio.write_atomic(paths.file("config", "endpoints.json"), json.dumps(
            {"owui": {"base": root + "/api", "kind": "hub", "hub": "openwebui", "default": True},
             "far": {"base": "http://127.0.0.1:9/v1"}}))
        registry.add_registration("remote", "r1", "far")
        out = script("provider_tags.py")
    assert out.returncode == 0, out.stderr
    tags = json.loads(paths.file("config", "provider-tags.json").read_text(encoding="utf-8"))
    assert tags == {"mistralai/m:free": "openrouter/mistralai", "llama-70b": "groq", "qwen": "lan-box",
                    "phi": "lan-proxy", "own": "llm.example.invalid", "lost": "?", "gemma3": "local", "r1": "far"}
    assert "SECRET" not in out.stdout + out.stderr and "SECRET" not in json.dumps(tags)
    assert "     1  openrouter/mistralai" in out.stdout and len(seen) == 2

"""The dashboard through its real handler on a real socket (dashboard.md §1-6, §8.8, §8.9, §8.11, §9, §11;
security.md §3-8, §12-14). Each test starts `serve.serve()` on 127.0.0.1 port 0 over a bench whose models
answer from the local upstream (tests/conftest.py)."""

import datetime
import http.client
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import changes, fileio, paths, themes
from benchwarmers.demo import demo
from benchwarmers.server import gatekeys
from benchwarmers.admin import modeledit
from benchwarmers.store import store

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "a-very-long-admin-token-0123456789"


@pytest.fixture
def dash(bench):
    demo.set_collection("core", ["alpha", "beta"], description="two reviewers", tags=["review"])
    demo.set_collection("vision", ["seer"], description="reads images")
    srv = serve.serve("127.0.0.1", 0)
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def call(port, method, path, body=None, headers=None, host=None, source=None):
    """`(status, headers, parsed body or text)`; a dict body is sent as JSON, from the address `source` if given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0) if source else None)
    sent = {"Host": host or f"127.0.0.1:{port}", **(headers or {})}
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    conn.request(method, path, body=data, headers=sent)
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    kind = resp.getheader("Content-Type") or ""
    return resp.status, resp, json.loads(raw) if kind.startswith("application/json") else raw.decode("utf-8", "replace")


def change_lines():
    return fileio.read_jsonl(paths.file("config", "changes.jsonl")) if paths.file("config", "changes.jsonl").exists() \
        else []


# -- routing and headers (RT-1..6, RESP-2, SRV-5) ---------------------------------------------------------------------

def test_gateway_routes_answer_on_the_dashboard_port_rt1_rt2_test15(dash):
    status, resp, body = call(dash, "GET", "/api/tags")
    assert status == 200 and "bench/core" in [m["name"] for m in body["models"]]
    status, resp, body = call(dash, "GET", "/v1/models")
    assert status == 200 and resp.getheader("Content-Type") == "application/json; charset=utf-8"
    assert resp.getheader("Cache-Control") == "no-store" and resp.getheader("X-Benchwarmers-Version")
    status, _, body = call(dash, "GET", "/api/stamp")
    assert status == 200 and isinstance(body["stamp"], float) and "ok" not in body


def test_page_headers_and_unknown_routes_rt4_rt5_test16(dash):
    status, resp, text = call(dash, "GET", "/")
    assert status == 200 and text.startswith("<!doctype html>") and 'data-theme="hardwood"' in text
    assert resp.getheader("Cache-Control") == "no-store" and resp.getheader("X-Frame-Options") == "DENY"
    assert "window.BENCH = {" in text and "{{" not in text
    assert call(dash, "GET", "/api/nothing-here")[1].getheader("Content-Type").startswith("text/html")
    assert call(dash, "GET", "/?theme=dark")[2].count('data-theme="dark"') == 1
    status, _, body = call(dash, "POST", "/api/nope", {})
    assert (status, body) == (404, {"ok": False, "errors": ["unknown endpoint"]})
    assert call(dash, "POST", "/api/theme?x=1", {"theme": "dark"})[0] == 404  # RT-6: POST routes match exactly
    assert call(dash, "GET", "/api/gateway-seat")[1].getheader("Content-Type").startswith("text/html")
    assert call(dash, "GET", "/api/status?verbose=1")[2]["ok"] is True  # IMP-3: GET JSON routes take a query
    assert call(dash, "OPTIONS", "/api/stamp")[0] == 501
    assert call(dash, "PUT", "/api/stamp")[0] == 501


def test_static_files_are_named_th8(dash):
    status, resp, text = call(dash, "GET", "/ui/bench.css")
    assert status == 200 and resp.getheader("Cache-Control") == "max-age=86400" and "--ok" in text
    assert resp.getheader("X-Content-Type-Options") == "nosniff"
    for path in ("/ui/../serve.py", "/ui/bench.css?v=1", "/ui/index.html", "/fonts/chivo-latin-400-normal.woff2"):
        assert call(dash, "GET", path)[0] == 404


def test_host_and_write_checks_auth1_auth2(dash):
    status, _, body = call(dash, "GET", "/health", host="evil.example")
    assert (status, body) == (200, {"ok": True})
    status, _, body = call(dash, "GET", "/api/stamp", host="evil.example:80")
    assert status == 403 and body["errors"] == [
        "unknown Host 'evil.example:80'; set BENCHWARMERS_PUBLIC_URL or BENCH_ALLOWED_HOSTS to add one"]
    assert call(dash, "GET", "/api/stamp", host="127.0.0.1")[0] == 403
    assert call(dash, "GET", "/api/stamp", host=f"LOCALHOST:{dash}")[0] == 200
    theme = {"theme": "dark"}
    status, resp, body = call(dash, "POST", "/api/theme", theme, {"Sec-Fetch-Site": "cross-site"})
    assert (status, body["errors"]) == (403, ["cross-site requests are refused"])
    assert resp.getheader("Access-Control-Allow-Origin") is None
    status, _, body = call(dash, "POST", "/api/theme", theme, {"Origin": "http://evil.example"})
    assert status == 403 and "Origin 'http://evil.example' is not allowed" in body["errors"][0]
    status, _, body = call(dash, "POST", "/api/theme", b"{}", {"Content-Type": "text/plain"})
    assert (status, body["errors"]) == (415, ["send Content-Type: application/json"])
    status, _, body = call(dash, "POST", "/api/theme", b"x" * 1_000_001)
    assert status == 413 and body["errors"] == ["body is 1,000,001 bytes; the limit is 1,000,000"]
    assert call(dash, "POST", "/api/theme", theme, {"Origin": f"http://localhost:{dash}"})[0] == 200


def test_bad_bodies_are_400_resp3_imp2(dash):
    status, _, body = call(dash, "POST", "/api/collection", b"[1, 2]")
    assert status == 400 and body["errors"] == ["bad request: body must be a JSON object"] and body["changed"] == []
    status, _, body = call(dash, "POST", "/api/collection", b"{nope")
    assert status == 400 and body["errors"][0].startswith("bad request: ")
    status, _, body = call(dash, "POST", "/api/collection", b"")  # RESP-4: an empty body is {}
    assert status == 400 and "a collection needs at least one member" in body["errors"]


def test_broken_endpoints_file_resp5_api4(dash):
    paths.file("config", "endpoints.json").write_text("{broken", encoding="utf-8")
    status, _, text = call(dash, "GET", "/")
    assert status == 200 and "cannot be read" in text
    status, _, body = call(dash, "GET", "/api/status")
    assert status == 400 and body["ok"] is False and "cannot be read" in body["errors"][0]
    assert paths.file("config", "endpoints.json").read_text(encoding="utf-8") == "{broken"


# -- login (AUTH-3..7, ADM-*, TEST-14) --------------------------------------------------------------------------------

def login(port):
    status, resp, body = call(port, "POST", "/login", {"token": TOKEN})
    assert status == 200 and body == {"ok": True, "errors": []}
    return resp.getheader("Set-Cookie").split(";", 1)[0]


def test_no_token_means_local_and_no_login_auth3(dash):
    assert call(dash, "GET", "/login")[0] == 303
    assert call(dash, "GET", "/api/stamp", headers={"Authorization": "Bearer whatever"})[0] == 200


def test_login_cookie_and_order_of_refusals_auth4_auth5(dash, monkeypatch, capsys):
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    status, resp, _ = call(dash, "GET", "/")
    assert status == 303 and resp.getheader("Location") == "/login"
    assert call(dash, "GET", "/fonts/chivo-latin-400-normal.woff2")[0] == 303
    status, _, body = call(dash, "GET", "/api/stamp")
    assert status == 401 and body["errors"] == ["sign in first: /login, or send the admin token as Authorization: Bearer"]
    assert call(dash, "POST", "/api/nope", {}, host="evil.example:1")[0] == 403
    assert call(dash, "POST", "/api/nope", {})[0] == 401
    status, _, text = call(dash, "GET", "/login")
    assert status == 200 and "Admin token" in text and 'autocomplete="current-password"' in text
    assert call(dash, "POST", "/login", {"token": "wrong"})[2]["errors"] == ["that is not the admin token"]
    assert call(dash, "POST", "/login", b"[]")[2]["errors"] == ['send {"token": "..."}']
    assert call(dash, "POST", "/login", {"token": TOKEN}, {"Origin": "http://evil.example"})[0] == 403
    status, resp, _ = call(dash, "POST", "/login", {"token": TOKEN})
    cookie = resp.getheader("Set-Cookie")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Max-Age=28800" in cookie and TOKEN not in cookie
    assert cookie.startswith(f"bw_session_{dash}=")
    jar = {"Cookie": cookie.split(";", 1)[0]}
    assert call(dash, "GET", "/api/stamp", headers=jar)[0] == 200
    assert call(dash, "POST", "/api/nope", {}, jar)[0] == 404
    status, _, body = call(dash, "POST", "/api/theme", {"theme": "nope"}, jar)
    assert status == 400 and body["errors"][0].startswith("no theme called 'nope'")
    assert call(dash, "GET", "/api/stamp", headers={"Authorization": f"bearer  {TOKEN} "})[0] == 200
    status, _, body = call(dash, "GET", "/api/stamp", headers={**jar, "Authorization": "Bearer nope"})
    assert status == 401 and "not the admin token" in body["errors"][0]
    status, resp, body = call(dash, "POST", "/logout", {}, jar)
    assert status == 200 and resp.getheader("Set-Cookie").startswith(f"bw_session_{dash}=; Path=/; Max-Age=0")
    log = capsys.readouterr().err
    assert "GET /api/stamp 200 admin" in log and TOKEN not in log


def test_gateway_routes_take_keys_never_the_cookie_rt2(dash, monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    jar = {"Cookie": login(dash)}
    assert call(dash, "GET", "/v1/models", headers=jar)[0] == 401
    assert call(dash, "GET", "/v1/models", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 401
    status, _, body = call(dash, "POST", "/api/gateway-key", {"name": "chat-ui"}, jar)
    key = body["key"]
    assert status == 200 and key.startswith("bwk_") and len(key) == 47
    assert call(dash, "GET", "/v1/models", headers={"Authorization": f"Bearer {key}"})[0] == 200
    assert call(dash, "GET", "/api/stamp", headers={"Authorization": f"Bearer {key}"})[0] == 401
    assert call(dash, "GET", "/", headers={"Authorization": f"Bearer {key}"})[0] == 303
    status, _, body = call(dash, "POST", "/bench/verdict", {"call": "x"}, {"Authorization": f"Bearer {key}"})
    assert status == 400 and "useful" in json.dumps(body)


def test_issue29_item5_logout_and_a_new_token_end_every_session_even_across_a_restart(home, monkeypatch):
    """Issue 29 item 5: a cookie replayed after a real `POST /logout` is refused, and so is every other session
    issued before it; the revocation holds after the dashboard restarts (the epoch is in the data folder, 0600),
    and sessions not revoked survive the restart. A stranger's logout ends no one's session. A changed token ends
    every session, and changing it back revives none."""
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    srv = serve.serve("127.0.0.1", 0)
    port = srv.server_address[1]
    try:
        first, second = {"Cookie": login(port)}, {"Cookie": login(port)}
        assert call(port, "GET", "/api/stamp", headers=first)[0] == call(port, "GET", "/api/stamp", headers=second)[0] \
            == 200
        status, resp, _ = call(port, "POST", "/logout", {})  # no session: its own cookie cleared, no one signed out
        assert status == 200 and "Max-Age=0" in resp.getheader("Set-Cookie")
        assert call(port, "GET", "/api/stamp", headers=first)[0] == 200
        assert call(port, "POST", "/logout", {}, first)[0] == 200
        for replayed in (first, second):
            status, _, body = call(port, "GET", "/api/stamp", headers=replayed)
            assert status == 401 and body["errors"][0].startswith("sign in first")
            assert call(port, "GET", "/", headers=replayed)[1].getheader("Location") == "/login"
        third = {"Cookie": login(port)}
        assert call(port, "GET", "/api/stamp", headers=third)[0] == 200
    finally:
        srv.shutdown()
        srv.server_close()
    assert stat.S_IMODE(os.stat(paths.file("runs", "admin-sessions.json")).st_mode) == 0o600
    srv = serve.serve("127.0.0.1", port)  # the dashboard restarted, on the same port
    try:
        assert call(port, "GET", "/api/stamp", headers=first)[0] == 401
        assert call(port, "GET", "/api/stamp", headers=third)[0] == 200
        monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN + "-changed")
        assert call(port, "GET", "/api/stamp", headers=third)[0] == 401
        status, resp, _ = call(port, "POST", "/login", {"token": TOKEN + "-changed"})
        fourth = {"Cookie": resp.getheader("Set-Cookie").split(";", 1)[0]}
        assert status == 200 and call(port, "GET", "/api/stamp", headers=fourth)[0] == 200
        monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)  # the old token again: its sessions stay ended
        assert call(port, "GET", "/api/stamp", headers=third)[0] == 401
        assert call(port, "GET", "/api/stamp", headers=fourth)[0] == 401
    finally:
        srv.shutdown()
        srv.server_close()


def test_issue29_item6_a_session_cookie_is_refused_on_another_port(home, monkeypatch):
    """Issue 29 item 6: a browser sends a host's cookies to all its ports, so a cookie from one dashboard reaches
    another port of the same host; there it is refused, under its own name and renamed, and the standalone
    gateway never takes a cookie. Each dashboard keeps its own session beside the other's."""
    from benchwarmers.server import gateway

    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    one, two, standalone = serve.serve("127.0.0.1", 0), serve.serve("127.0.0.1", 0), gateway.serve("127.0.0.1", 0)
    a, b, g = (s.server_address[1] for s in (one, two, standalone))
    try:
        cookie = login(a)
        name, value = cookie.split("=", 1)
        assert name == f"bw_session_{a}"
        assert call(a, "GET", "/api/stamp", headers={"Cookie": cookie})[0] == 200
        for replayed in (cookie, f"bw_session_{b}={value}", f"bw_session={value}"):
            assert call(b, "GET", "/api/stamp", headers={"Cookie": replayed})[0] == 401, replayed
            assert call(b, "GET", "/", headers={"Cookie": replayed})[1].getheader("Location") == "/login"
            assert call(g, "GET", "/v1/models", headers={"Cookie": replayed})[0] == 401
        both = f"{cookie}; {login(b)}"  # what the browser sends either port once signed in to both
        assert call(a, "GET", "/api/stamp", headers={"Cookie": both})[0] == 200
        assert call(b, "GET", "/api/stamp", headers={"Cookie": both})[0] == 200
    finally:
        for srv in (one, two, standalone):
            srv.shutdown()
            srv.server_close()


def wrong_logins(port, source, count, headers=None):
    """`count` wrong tokens from `source`, each answered 401."""
    for guess in range(count):
        status, _, body = call(port, "POST", "/login", {"token": f"guess-{guess}"}, headers, source=source)
        assert (status, body["errors"]) == (401, ["that is not the admin token"]), (source, guess)


def test_issue29_item7_the_backoff_holds_an_ipv6_client_by_its_64(dash, monkeypatch):
    """Issue 29 item 7: behind a proxy (`BENCH_TRUST_FORWARDED`), ten wrong tokens from one IPv6 address hold up
    every address of its /64, as the connection cap counts them; the next /64 may still sign in."""
    from benchwarmers.server import guard

    monkeypatch.setattr(guard, "LOGINS", guard.Backoff())
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("BENCH_TRUST_FORWARDED", "1")
    wrong_logins(dash, "127.0.0.1", 10, {"X-Forwarded-For": "2001:db8:0:1::7"})
    status, resp, body = call(dash, "POST", "/login", {"token": TOKEN}, {"X-Forwarded-For": "2001:db8:0:1:ab::9"})
    assert status == 429 and body["errors"][0].startswith("too many wrong admin tokens from this address")
    assert 1 <= int(resp.getheader("Retry-After")) <= 61
    assert call(dash, "POST", "/login", {"token": TOKEN}, {"X-Forwarded-For": "2001:db8:0:2::7"})[0] == 200


def test_issue29_item7_a_guesser_spread_over_addresses_meets_the_global_ceiling(dash, monkeypatch):
    """Issue 29 item 7: ten wrong tokens from 127.0.0.7 hold up 127.0.0.7 only (an IPv4 address is one client, as
    for the connection cap); wrong tokens spread over 127.0.0.8, .9 and .10 reach the ceiling on failures from
    everyone, and then every login, right token and admin bearer included, waits, from any address; a session
    signed in before goes on."""
    from benchwarmers.server import guard

    monkeypatch.setattr(guard, "LOGINS", guard.Backoff())
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    monkeypatch.setenv("BENCH_FAILED_LOGINS_PER_MINUTE", "25")
    wrong_logins(dash, "127.0.0.7", 10)
    status, _, body = call(dash, "POST", "/login", {"token": TOKEN}, source="127.0.0.7")
    assert status == 429 and body["errors"][0].startswith("too many wrong admin tokens from this address")
    status, resp, _ = call(dash, "POST", "/login", {"token": TOKEN}, source="127.0.0.8")
    assert status == 200
    session = {"Cookie": resp.getheader("Set-Cookie").split(";", 1)[0]}
    wrong_logins(dash, "127.0.0.8", 9)
    wrong_logins(dash, "127.0.0.9", 6)
    for source in ("127.0.0.9", "127.0.0.10", "127.0.0.11"):
        status, resp, body = call(dash, "POST", "/login", {"token": TOKEN}, source=source)
        assert status == 429 and body["errors"][0].startswith("too many wrong admin tokens from all addresses")
        assert 1 <= int(resp.getheader("Retry-After")) <= 61
    status, _, body = call(dash, "GET", "/api/stamp", headers={"Authorization": f"Bearer {TOKEN}"}, source="127.0.0.12")
    assert status == 429 and "from all addresses" in body["errors"][0]
    assert call(dash, "GET", "/api/stamp", headers=session, source="127.0.0.12")[0] == 200


# -- startup (SRV-1, SRV-2, START-*) ----------------------------------------------------------------------------------

def run_serve(env, *args, wait=True):
    full = {**os.environ, **env}
    return subprocess.run([sys.executable, str(ROOT / "serve.py"), *args], capture_output=True, text=True,
                          timeout=30, env=full)


def test_startup_refusals_srv2(home):
    done = run_serve({"BENCH_BIND": "0.0.0.0"})
    assert done.returncode != 0 and "BENCHWARMERS_ADMIN_TOKEN" in done.stderr
    done = run_serve({"BENCHWARMERS_ADMIN_TOKEN": "short"})
    assert done.returncode != 0 and "5 characters; the minimum is 16" in done.stderr
    done = run_serve({"BENCHWARMERS_PUBLIC_URL": "example.com"})
    assert done.returncode != 0 and "http(s)://host[:port]" in done.stderr


def test_startup_line_and_layout_srv1(home, tmp_path):
    data = tmp_path / "fresh"
    env = {**os.environ, "BENCHWARMERS_HOME": str(data), "BENCH_PORT": "0",
           "BENCHWARMERS_ADMIN_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, str(ROOT / "serve.py")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        line = proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(10)
    assert line.startswith("Benchwarmers on http://localhost:") and "(login on)" in line and "(ctrl-c to stop)" in line
    assert TOKEN not in line
    assert all((data / part).is_dir() for part in ("config", "metrics", "perf", "runs", "suite/tasks"))


# -- read-only JSON (API-1, API-2, ST-7) ------------------------------------------------------------------------------

def test_status_and_models_api1_api2(dash):
    status, _, body = call(dash, "GET", "/api/status")
    assert status == 200 and body["models"] == 10 and body["collections"] == 2 and body["default_endpoint"] == "demo"
    assert body["gateway"] == f"http://127.0.0.1:{dash}/v1" and body["auth"] is False and body["client"] == "builtin"
    assert set(body["scheduler_jobs"]) >= {"perf", "suite"} and body["onboarding"] == {"running": False, "items": 0}
    rows = call(dash, "GET", "/api/models")[2]["models"]
    assert [r["alias"] for r in rows] == sorted(r["alias"] for r in rows)
    alpha = next(r for r in rows if r["alias"] == "alpha")
    assert alpha["status"] == "untested" and alpha["kind"] == "chat" and alpha["retired"] is False


# -- collections (CO-2, CO-7, CO-8, CO-10) ----------------------------------------------------------------------------

def test_collection_editor_rules_collect_every_error_co7(dash):
    body = {"name": "X", "members": ["alpha", "picker", "nobody"], "shape": "image", "tags": ["Bad Tag"] + list("abcdefghi"),
            "reply": "sometimes", "merger": "ghost", "description": "d" * 301}
    status, _, answer = call(dash, "POST", "/api/collection", body)
    assert status == 400 and not change_lines()
    text = " | ".join(answer["errors"])
    for said in ("name: 2-32 lower-case letters", "not chat models on the bench: picker, nobody", "shape must be one of",
                 "description: at most 300 characters", "tags are lower-case words joined by '-'", "at most 8 tags",
                 "reply must be one of all, merged, route, council", "merger: 'ghost' is not a chat model on the bench"):
        assert said in text
    many = {"name": "many", "members": ["alpha", "beta", "gamma", "slow", "seer", "tiny"]}
    assert "at most 5 members" in call(dash, "POST", "/api/collection", many)[2]["errors"][0]


def test_collection_save_list_and_remove_co2_co8(dash):
    body = {"name": "bench/Reviewers ", "members": [" gamma", "alpha", "gamma"], "tags": "Review, fast,review",
            "description": "  spots   bugs ", "reply": None, "merger": None, "shape": "review"}
    status, _, answer = call(dash, "POST", "/api/collection", {**body, "name": "reviewers"})
    assert (status, answer) == (200, {"ok": True, "errors": [], "changed": ["config/collections.json"]})
    saved = fileio.read_json(paths.file("config", "collections.json"))["reviewers"]
    assert saved == {"members": ["gamma", "alpha"], "shape": "review", "description": "spots bugs",
                     "tags": ["review", "fast"], "reply": "all", "merger": ""}
    view = call(dash, "GET", "/api/collections")[2]
    assert [c["name"] for c in view["collections"]] == ["core", "reviewers", "vision"]
    row = view["collections"][1]
    assert row["explorers"] == 0 and row["together"]["context_window"] == 32000
    assert "image" not in view["shapes"] and "second-opinion" in view["tag_suggestions"]
    assert view["facts"]["seer"]["caps"]["vision"] is True
    assert call(dash, "POST", "/api/collection/remove", {"name": "nothing"})[2]["errors"] == ["no collection 'nothing'"]
    assert call(dash, "POST", "/api/collection/remove", {"name": "reviewers"})[0] == 200
    lines = [(c["field"], c["by"], c["old"] is None, c["new"] is None) for c in change_lines()]
    assert lines == [("collection reviewers", "ui", True, False), ("collection reviewers", "ui", False, True)]


def test_broken_collections_file_is_never_overwritten_resp6(dash):
    paths.file("config", "collections.json").write_text("{oops", encoding="utf-8")
    status, _, answer = call(dash, "POST", "/api/collection", {"name": "fresh", "members": ["alpha"]})
    assert status == 400 and "is not valid JSON; fix it by hand first" in answer["errors"][-1]
    assert paths.file("config", "collections.json").read_text(encoding="utf-8") == "{oops"


def test_gateway_settings_co10(dash):
    status, _, answer = call(dash, "POST", "/api/gateway-settings", {"max_calls": 1, "max_explorers": 3})
    assert status == 400 and answer["errors"] == [
        "max explorers must be 0, 1 or 2 (route.py seats at most two)",
        "these collections have more members than 1: core"]
    assert call(dash, "POST", "/api/gateway-settings", {"max_calls": True, "max_explorers": 1})[0] == 400
    fileio.update(paths.file("config", "gateway.json"), lambda d: d.update(default_collection="core", stop_grace=3))
    assert call(dash, "POST", "/api/gateway-settings", {"max_calls": 4, "max_explorers": 1})[0] == 200
    saved = fileio.read_json(paths.file("config", "gateway.json"))
    assert saved == {"max_calls": 4, "max_explorers": 1, "stop_grace": 3}
    line = change_lines()[-1]
    assert line["field"] == "gateway settings" and line["new"] == {"max_calls": 4, "max_explorers": 1}


# -- gateway keys (ST-5..7, MGMT-*) -----------------------------------------------------------------------------------

def test_gateway_keys_made_scoped_and_revoked_st5_st6(dash, monkeypatch):
    assert call(dash, "POST", "/api/gateway-key", {"name": "x", "collections": "core"})[2]["errors"] == [
        "collections must be a list of collection names"]
    assert call(dash, "POST", "/api/gateway-key", {"name": "estate", "collections": ["nope"]})[2]["errors"] == [
        "no collection named nope"]
    for rpm in ("lots", 0, "0", 2.5, True):
        assert call(dash, "POST", "/api/gateway-key", {"name": "estate", "rpm": rpm})[0] == 400
    status, _, made = call(dash, "POST", "/api/gateway-key", {"name": " Estate ", "collections": ["vision"], "rpm": "1"})
    assert status == 200 and made["name"] == "estate"
    key = made["key"]
    assert "taken" not in made and call(dash, "POST", "/api/gateway-key", {"name": "estate"})[0] == 400
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    bearer = {"Authorization": f"Bearer {key}"}
    ids = [row["id"] for row in call(dash, "GET", "/v1/models", headers=bearer)[2]["data"]]
    assert ids == ["bench/vision", "bench/vision:merged", "bench/vision:route",
                   "bench/vision:council"]
    listed = call(dash, "GET", "/api/gateway-keys")[2]
    assert listed["required"] is True and listed["keys"][0]["collections"] == ["vision"] and listed["keys"][0]["rpm"] == 1
    for where in (gatekeys.path(), paths.file("config", "changes.jsonl")):
        assert key not in where.read_text(encoding="utf-8")
    assert key not in json.dumps(call(dash, "GET", "/api/settings")[2]) and key not in call(dash, "GET", "/")[2]
    assert call(dash, "POST", "/api/gateway-key/remove", {"name": "estate"})[2] == {"ok": True, "errors": []}
    assert call(dash, "GET", "/v1/models", headers=bearer)[0] == 401
    assert call(dash, "POST", "/api/gateway-key/remove", {"name": "estate"})[2]["errors"] == [
        "no gateway key named 'estate'"]
    fields = [(c["field"], c["old"], c["new"]) for c in change_lines()]
    assert fields == [("gateway key", None, {"name": "estate", "collections": ["vision"], "rpm": 1}),
                      ("gateway key", "estate", None)]


def test_scoped_and_paced_keys_and_the_preflight_on_the_dashboard_port_test14(dash, monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    made = call(dash, "POST", "/api/gateway-key", {"name": "seer-app", "collections": ["vision"], "rpm": "1"})[2]
    bearer = {"Authorization": f"Bearer {made['key']}"}
    status, _, body = call(dash, "POST", "/v1/chat/completions",
                           {"model": "bench/core", "messages": [{"role": "user", "content": "hi"}]}, bearer)
    assert status == 403 and "bench/vision" in json.dumps(body) and "bench/core" in json.dumps(body)
    paced = {"model": "bench/vision", "messages": [{"role": "user", "content": "hi"}]}
    assert call(dash, "POST", "/v1/chat/completions", paced, bearer)[0] == 200
    status, resp, _ = call(dash, "POST", "/v1/chat/completions", paced, bearer)
    assert status == 429 and int(resp.getheader("Retry-After")) >= 1
    monkeypatch.setenv("BENCH_ALLOWED_ORIGINS", "http://app.example:5173")
    status, resp, _ = call(dash, "OPTIONS", "/v1/chat/completions", headers={
        "Origin": "http://app.example:5173", "Access-Control-Request-Method": "POST"})
    assert status == 204 and resp.getheader("Access-Control-Allow-Origin") == "http://app.example:5173"
    assert resp.getheader("Vary") == "Origin" and "POST" in resp.getheader("Access-Control-Allow-Methods")
    status, resp, _ = call(dash, "OPTIONS", "/api/stamp", headers={"Origin": "http://app.example:5173"})
    assert status == 501 and resp.getheader("Access-Control-Allow-Origin") is None  # the dashboard's own routes: no CORS


# -- the gateway card, the verdict dialog (GW-1..6, RT-25) ------------------------------------------------------------

def ask(port, collection="core", key=None):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    status, resp, body = call(port, "POST", "/v1/chat/completions",
                              {"model": f"bench/{collection}", "messages": [{"role": "user", "content": "Review x=1"}]},
                              headers)
    assert status == 200
    return body


def test_card_lists_panels_and_verdicts_owed_gw1_gw2(dash):
    assert call(dash, "GET", "/api/gateway-card")[2]["panels"] == []
    ask(dash)
    card = call(dash, "GET", "/api/gateway-card")[2]
    panel = card["panels"][0]
    assert panel["model"] == "bench/core" and panel["key"] == "local" and card["seats"] == len(panel["seats"]) == 2
    assert panel["owed"] == 2 and card["owed"] == 2
    assert [s["alias"] for s in panel["seats"]] == ["alpha", "beta"] and all(s["status"] == "ok" for s in panel["seats"])
    call_id = panel["seats"][0]["call"]
    status, _, seat = call(dash, "GET", f"/api/gateway-seat?call={call_id}")
    assert status == 200 and seat["alias"] == "alpha" and seat["prompt"] == "Review x=1" and seat["useful"] is None
    assert "Alpha" in seat["answer"]
    status, _, answer = call(dash, "GET", "/api/gateway-seat?call=p0.member9")
    assert (status, answer["errors"]) == (404, ["no gateway seat with call id 'p0.member9'"])


def test_verdict_dialog_save_gw6(dash):
    ask(dash)
    call_id = call(dash, "GET", "/api/gateway-card")[2]["panels"][0]["seats"][0]["call"]
    status, _, answer = call(dash, "POST", "/api/verdict", {"call": call_id, "useful": "yes", "real": "x"})
    assert status == 400 and answer["errors"] == ["choose useful or not useful", "real claims must be a list of sentences"]
    assert call(dash, "POST", "/api/verdict", {"call": "p0.x", "useful": True})[2]["errors"][0].startswith(
        "no offload with call id 'p0.x'")
    body = {"call": call_id, "useful": True, "note": "  found   it ", "real": ["the loop  skips", " ", "x" * 500],
            "false": None}
    status, _, answer = call(dash, "POST", "/api/verdict", body)
    assert (status, answer) == (200, {"ok": True, "changed": ["alpha useful"], "sync": ""})
    seat = call(dash, "GET", f"/api/gateway-seat?call={call_id}")[2]
    assert seat["useful"] is True and seat["note"] == "found it" and seat["real"] == ["the loop skips", "x" * 400]
    panel = call(dash, "GET", "/api/gateway-card")[2]["panels"][0]
    assert panel["owed"] == 1 and panel["seats"][0]["useful"] is True
    record = call(dash, "GET", "/bench/record?collection=core")[2]["aliases"]
    assert record["alpha"]["useful"] == 1
    call(dash, "POST", "/api/verdict", {"call": call_id, "useful": True})  # replace mode: blank clears
    assert call(dash, "GET", f"/api/gateway-seat?call={call_id}")[2]["note"] == ""


def route_line(conversation, turn, at, **fields):
    line = {"conversation": conversation, "call": f"{conversation}.1", "at": at, "model": "bench/core", "key": "agent",
            "alias": "alpha", "turn": turn, "task": "Fix the failing test in parser.py " * 3, "status": "ok",
            "seconds": 1.2, "first_token_s": 0.3, "tool_calls": 2, "finish": "tool_calls"}
    line.update(fields)
    fileio.append_jsonl(paths.file("runs", "gateway", "routes.jsonl"), line)


def test_route_conversations_rt25_gw3(dash):
    assert call(dash, "GET", "/api/gateway-card")[2]["conversations"] == []
    route_line("r1", 1, "2026-12-01T10:00:00+00:00")
    route_line("r2", 1, "2026-12-01T11:00:00+00:00")
    route_line("r1", 2, "2026-12-01T12:00:00+00:00", alias="beta", call="r1.2", tried=["alpha"], tool_calls=1,
               status="error", error="upstream said no")
    fileio.append_bytes(paths.file("runs", "gateway", "routes.jsonl"), b"not json\n")
    rows = call(dash, "GET", "/api/gateway-card")[2]["conversations"]
    assert [r["conversation"] for r in rows] == ["r1", "r2"]
    first = rows[0]
    assert first["at"] == "2026-12-01T10:00:00+00:00" and first["key"] == "agent" and len(first["task"]) == 60
    assert first["turns"] == 2 and first["tool_calls"] == 3 and first["failovers"] == 1
    assert first["status"] == "error" and first["error"] == "upstream said no"
    assert [(a["alias"], a["call"]) for a in first["answered"]] == [("alpha", "r1.1"), ("beta", "r1.2")]
    assert call(dash, "GET", "/api/gateway-card")[2]["owed"] == 0


# -- the model writes (MP-6..18, TEST-1..3) ---------------------------------------------------------------------------

def test_model_change_refusals_change_nothing_test1(dash):
    paths.file("config", "alias-history.json").write_text('{"old-alpha": "alpha"}', encoding="utf-8")
    refusals = [({"alias": "nobody", "new_role": "code"}, "'nobody' is not a registered alias"),
                ({"alias": "alpha"}, "nothing to change"),
                ({"alias": "alpha", "new_role": "wizard"}, "role must be one of"),
                ({"alias": "alpha", "new_role": "decision"}, "the decision role is fixed"),
                ({"alias": "alpha", "new_alias": "al pha"}, "alias must be letters, digits"),
                ({"alias": "alpha", "new_alias": "beta"}, "'beta' is already the alias of beta"),
                ({"alias": "alpha", "new_alias": "old-alpha"}, "is a retired alias (it became 'alpha')"),
                ({"alias": "alpha", "new_alias": "BETA"}, "differs from an existing alias only by case"),
                ({"alias": "alpha", "new_ad_hoc": "yes"}, "ad_hoc must be true or false; got 'yes'")]
    for body, said in refusals:
        status, _, answer = call(dash, "POST", "/api/model", body)
        assert status == 400 and said in answer["errors"][0] and answer["changed"] == [], body
    assert change_lines() == []


def test_a_name_in_retired_json_is_never_reused_test1(dash):
    assert call(dash, "POST", "/api/remove", {"alias": "gamma"})[0] == 200
    before = paths.file("config", "extra-openai-models.yaml").read_text(encoding="utf-8")
    lines = len(change_lines())
    status, _, answer = call(dash, "POST", "/api/model", {"alias": "alpha", "new_alias": "gamma"})
    assert status == 400 and answer["changed"] == [] and answer["errors"] == [
        "'gamma' was removed from the bench; a retired name is never reused, because the run notes still say it"]
    assert paths.file("config", "extra-openai-models.yaml").read_text(encoding="utf-8") == before
    assert len(change_lines()) == lines


def test_model_role_ad_hoc_and_rename_test1(dash):
    status, _, answer = call(dash, "POST", "/api/model",
                             {"alias": "alpha", "new_role": "code", "new_ad_hoc": True, "new_alias": "alpha-2"})
    assert status == 200 and answer["sync"] == "synced to the llm CLI"
    assert set(answer["changed"]) == {"config/model-roles.json", "config/extra-openai-models.yaml",
                                      "config/alias-history.json"}
    model_roles = fileio.read_json(paths.file("config", "model-roles.json"))
    assert model_roles["models"] == {"alpha-2": "code"} and model_roles["ad_hoc"] == ["alpha-2"]
    assert fileio.read_json(paths.file("config", "alias-history.json")) == {"alpha": "alpha-2"}
    assert [c["field"] for c in change_lines()] == ["role", "ad_hoc", "alias"]
    models = {r["alias"]: r for r in call(dash, "GET", "/api/models")[2]["models"]}
    assert "alpha" not in models and models["alpha-2"]["served"] == "alpha"
    assert call(dash, "POST", "/api/model", {"alias": "beta", "new_alias": "alpha"})[2]["errors"][0].startswith(
        "'alpha' is a retired alias")
    ask(dash)  # the collection still names alpha, which the gateway follows through the history


def test_retire_and_restore_keep_collections_test2_test3(dash):
    demo.set_collection("merged", ["alpha", "gamma"], reply="merged", merger="alpha")
    status, _, answer = call(dash, "POST", "/api/remove", {"alias": "alpha", "reason": " too slow "})
    assert status == 200 and "config/collections.json" in answer["changed"]
    retired = fileio.read_json(paths.file("config", "retired.json"))["alpha"]
    assert retired["why"] == "too slow" and retired["collections"] == {"core": ["members"],
                                                                       "merged": ["members", "merger"]}
    found = fileio.read_json(paths.file("config", "collections.json"))
    assert found["core"]["members"] == ["beta"] and found["merged"]["merger"] == ""
    assert found["vision"]["members"] == ["seer"]
    fields = [c["field"] for c in change_lines()]
    assert fields == ["collection core", "collection merged", "removed"]
    models = {r["alias"]: r for r in call(dash, "GET", "/api/models")[2]["models"]}
    assert models["alpha"]["retired"] is True and models["alpha"]["status"] == "retired"
    assert call(dash, "POST", "/api/remove", {"alias": "alpha"})[2]["errors"] == ["'alpha' is not a registered alias"]
    assert call(dash, "POST", "/api/restore", {"alias": "beta"})[2]["errors"] == ["'beta' is not a retired alias"]
    status, _, answer = call(dash, "POST", "/api/restore", {"alias": "alpha"})
    assert status == 200 and answer["sync"] == "synced to the llm CLI"
    found = fileio.read_json(paths.file("config", "collections.json"))
    assert found["core"]["members"] == ["beta", "alpha"] and found["merged"]["merger"] == "alpha"
    assert "alpha" not in fileio.read_json(paths.file("config", "retired.json"))
    assert change_lines()[-1]["field"] == "restored" and change_lines()[-1]["new"] == "alpha"


def test_restore_edge_cases_and_a_lone_member_test2_test3(dash):
    demo.set_collection("solo", ["gamma"])
    demo.set_collection("doomed", ["gamma", "beta"])
    assert call(dash, "POST", "/api/remove", {"alias": "gamma"})[0] == 200
    found = fileio.read_json(paths.file("config", "collections.json"))
    assert found["solo"]["members"] == [] and found["doomed"]["members"] == ["beta"]  # TEST-2: a lone member leaves []
    assert fileio.read_json(paths.file("config", "retired.json"))["gamma"]["collections"] == {
        "doomed": ["members"], "solo": ["members"]}
    fileio.update(paths.file("config", "collections.json"), lambda d: d.pop("doomed"))  # deleted since: ignored
    fileio.update(paths.file("config", "collections.json"),
                  lambda d: d["solo"].__setitem__("members", ["alpha", "beta", "seer", "merger", "tiny"]))
    lines = len(change_lines())
    status, _, answer = call(dash, "POST", "/api/restore", {"alias": "gamma"})
    assert status == 200 and "config/collections.json" not in answer["changed"]
    found = fileio.read_json(paths.file("config", "collections.json"))
    assert "doomed" not in found  # a deleted collection is not brought back
    assert found["solo"]["members"] == ["alpha", "beta", "seer", "merger", "tiny"]  # full (max_calls 5): left as is
    assert [c["field"] for c in change_lines()[lines:]] == ["restored"]
    # a model in no collection, retired with no reason: collections.json is neither touched nor reported
    shown = paths.file("config", "collections.json").read_text(encoding="utf-8")
    status, _, answer = call(dash, "POST", "/api/remove", {"alias": "blank"})
    assert status == 200 and "config/collections.json" not in answer["changed"]
    assert fileio.read_json(paths.file("config", "retired.json"))["blank"]["why"] == "retired by hand"
    status, _, answer = call(dash, "POST", "/api/restore", {"alias": "blank"})
    assert status == 200 and "config/collections.json" not in answer["changed"]
    assert paths.file("config", "collections.json").read_text(encoding="utf-8") == shown


def test_retry_answers_or_says_why_mp18(dash):
    fileio.write_atomic(paths.file("metrics", "alerts.json"), json.dumps(
        {"model:pending:alpha": {"kind": "retiring", "message": "retires in 3 days", "action": "retry it",
                                 "first_seen": "2026-12-01", "alias": "alpha"}}))
    status, _, answer = call(dash, "GET", "/api/models")
    assert {r["alias"]: r for r in answer["models"]}["alpha"]["status"] == "retiring in 3d"
    status, _, answer = call(dash, "POST", "/api/retry", {"alias": "alpha"})
    assert status == 200 and answer["changed"][0].startswith("alpha answered in ")
    assert answer["changed"][1:] == ["cleared model:pending:alpha"]
    assert "alpha,retry,1" in paths.file("perf", "history.csv").read_text(encoding="utf-8")
    status, _, answer = call(dash, "POST", "/api/retry", {"alias": "gone"})
    assert status == 400 and answer["errors"][0].startswith("gone still fails (")
    assert call(dash, "POST", "/api/retry", {"alias": "nobody"})[2]["errors"] == ["'nobody' is not registered"]


# -- settings: theme and client (ST-2, ST-11, LOG-2, IMP-1, IMP-14) ---------------------------------------------------

def test_theme_and_client_writes_and_the_caller_st2_st11(dash, monkeypatch):
    status, _, answer = call(dash, "POST", "/api/theme", {"theme": "dark"})
    assert (status, answer) == (200, {"ok": True, "errors": [], "theme": "dark"})
    assert 'data-theme="dark"' in call(dash, "GET", "/")[2]
    assert call(dash, "POST", "/api/client", {"client": "llm"})[2]["errors"][0].startswith("BENCH_CLIENT is set")
    monkeypatch.delenv("BENCH_CLIENT")
    assert call(dash, "POST", "/api/client", {"client": "other"})[2]["errors"] == ["client: one of llm, builtin"]
    assert call(dash, "POST", "/api/client", {"client": "builtin"})[0] == 200  # the default: nothing to log
    assert call(dash, "POST", "/api/client", {"client": "llm"})[0] == 200
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    assert call(dash, "POST", "/api/theme", {"theme": "rainforest"}, {"Cookie": login(dash)})[0] == 200
    assert [(c["field"], c["by"]) for c in change_lines()] == [("theme", "ui"), ("model client", "ui"), ("theme", "admin")]


def test_every_theme_is_legible_th7():
    assert themes.names() == ["rainforest", "dark", "hardwood"]
    assert round(themes.ratio("#000000", "#ffffff"), 1) == 21.0 and round(themes.ratio("#777777", "#ffffff"), 2) == 4.48
    assert [p for name in themes.names() for p in themes.problems(name)] == []
    done = subprocess.run([sys.executable, "-m", "benchwarmers.core.themes"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip().endswith("3 themes: all legible")


# -- facts and call options (MP-20..23, TEST-7, IMP-5) ----------------------------------------------------------------

def test_model_facts_merge_and_clear_mp21_imp5(dash):
    fileio.write_atomic(paths.file("config", "model-overrides.json"),
                        json.dumps({"alpha": {"modalities": {"input": ["text"]}}}))
    bad = {"alias": "alpha", "facts": {"context_window": 12.5, "max_output": True, "knowledge_cutoff": "x" * 21,
                                       "limits": {"rpm": 0}}}
    status, _, answer = call(dash, "POST", "/api/model-facts", bad)
    assert status == 400 and answer["errors"] == [
        "context_window must be a positive whole number of tokens, or blank",
        "max_output must be a positive whole number of tokens, or blank",
        "knowledge_cutoff: at most 20 characters", "rpm must be a positive whole number or blank"]
    assert call(dash, "POST", "/api/model-facts", {"alias": "picker", "facts": {}})[2]["errors"] == [
        "'picker' is not a chat model on the bench"]
    good = {"alias": "alpha", "facts": {"context_window": 64000, "vision": True, "tools": "maybe",
                                        "knowledge_cutoff": " 2025 - 06 ", "limits": {"rpm": 30, "tpm": ""}}}
    assert call(dash, "POST", "/api/model-facts", good)[2] == {"ok": True, "errors": [],
                                                                 "changed": ["config/model-overrides.json"]}
    saved = fileio.read_json(paths.file("config", "model-overrides.json"))["alpha"]
    assert saved == {"modalities": {"input": ["text"]}, "context_window": 64000, "vision": True,
                     "knowledge_cutoff": "2025 - 06", "limits": {"rpm": 30}}
    status, _, models = call(dash, "GET", "/api/collections")
    assert models["facts"]["alpha"]["context"] == 64000 and models["facts"]["alpha"]["caps"]["vision"] is True
    call(dash, "POST", "/api/model-facts", {"alias": "alpha", "facts": {"vision": None, "context_window": ""}})
    saved = fileio.read_json(paths.file("config", "model-overrides.json"))["alpha"]
    assert "vision" not in saved and "context_window" not in saved and saved["limits"] == {"rpm": 30}
    assert [c["field"] for c in change_lines()] == ["facts", "facts"]


def test_call_options_mp23_test7(dash):
    fileio.write_atomic(paths.file("config", "model-overrides.json"), json.dumps({"alpha": {"max_output": 50000}}))
    fileio.write_atomic(paths.file("config", "model-options.json"), json.dumps({"_why": "kept", "alpha": {"top_p": 1}}))
    for value, said in ((50001, "max tokens: at most this model's max output, 50,000"),
                        (12.5, "max tokens: a whole number from 1 to 1,000,000, or blank"),
                        (True, "max tokens: a whole number from 1 to 1,000,000, or blank")):
        assert call(dash, "POST", "/api/model-options", {"alias": "alpha", "max_tokens": value})[2]["errors"] == [said]
    assert call(dash, "POST", "/api/model-options", {"alias": "nobody", "max_tokens": 5})[0] == 400
    status, _, answer = call(dash, "POST", "/api/model-options", {"alias": "alpha", "max_tokens": 31337})
    assert status == 200 and answer["changed"] == ["config/model-options.json"] and answer["note"]
    saved = fileio.read_json(paths.file("config", "model-options.json"), comments=False)
    assert saved == {"_why": "kept", "alpha": {"top_p": 1, "max_tokens": 31337}}
    assert call(dash, "POST", "/api/model-options", {"alias": "alpha", "max_tokens": 31337})[2]["note"] == "no change"
    call(dash, "POST", "/api/model-options", {"alias": "alpha", "max_tokens": None})
    assert fileio.read_json(paths.file("config", "model-options.json"), comments=False) == {"_why": "kept",
                                                                                            "alpha": {"top_p": 1}}
    assert [c["field"] for c in change_lines()] == ["options", "options"]


# -- what the pages read (GL-1..5, LG-1, SHELL-9, SRV-7) --------------------------------------------------------------

PERF_HEAD = ("timestamp,model,prompt,n,p50_s,p95_s,min_s,max_s,chars_per_s,answered,refused,error,timeout,failure,"
             "detail,tokens_per_s\n")


def bench_of(port):
    text = call(port, "GET", "/")[2]
    start = text.index("window.BENCH = ") + len("window.BENCH = ")
    return json.loads(text[start:text.index(";</script>", start)].replace("<\\/", "</"))


def test_status_vocabulary_and_glance_rows_gl1_gl2_gl3(dash):
    paths.file("perf", "history.csv").write_text(PERF_HEAD + "\n".join([
        "2026-12-01T05:00:00,alpha,tiny,4,1.25,2,1,2,30,4,0,0,0,,,",
        "2026-12-01T05:00:00,beta,tiny,4,0,0,0,0,0,0,0,4,0,capacity,,",
        "2026-12-01T05:00:00,gamma,tiny,4,0,0,0,0,0,0,0,0,4,,,",
        "2026-12-01T05:00:00,slow,tiny,4,0,0,0,0,0,0,0,4,0,structural,model gone upstream,"]) + "\n", encoding="utf-8")
    fileio.write_atomic(paths.file("config", "served-snapshot.json"), json.dumps({"first_missing": {"tiny": "2026-11-30"}}))
    fileio.append_jsonl(paths.file("config", "changes.jsonl"), {"at": changes.now_iso(), "by": "ui", "alias": "",
                                                                "field": "onboard (quick)", "old": None, "new": "seer"})
    rows = {r["alias"]: r for r in call(dash, "GET", "/api/models")[2]["models"]}
    assert (rows["alpha"]["status"], rows["alpha"]["why"]) == ("healthy", "answered its last probe")
    assert (rows["beta"]["status"], rows["beta"]["why"]) == ("throttled", "rate limit or quota")
    assert rows["gamma"]["status"] == "slow" and rows["blank"]["status"] == "untested"
    assert (rows["slow"]["status"], rows["slow"]["why"]) == ("not found", "model gone upstream")
    assert rows["tiny"]["status"] == "not served" and rows["tiny"]["why"] == "missing from demo since 2026-11-30"
    glance = {r["alias"]: r for r in bench_of(dash)["glance"]}
    assert glance["alpha"]["reply"] == 1.25 and glance["alpha"]["last"] == "2026-12-01"
    assert glance["seer"]["new"] is True and glance["alpha"]["new"] is False  # IMP-6: a quick onboarding counts
    assert glance["beta"]["css"] == "warn" and glance["slow"]["css"] == "err" and glance["alpha"]["css"] == "ok"
    assert glance["alpha"]["price"] == "free"  # a `local` connection


def test_glance_cells_context_source_decision_rows_and_suite_tasks_gl1_gl4(dash, monkeypatch):
    from benchwarmers.models import history
    today = datetime.date.today()
    fileio.write_atomic(paths.file("config", "decision-models.json"), json.dumps({
        "judge": {"served": "judge-1", "endpoint": "demo", "via": "hubby", "path": "decisions",
                  "question_types": ["noul", "score"], "onboarded": today.isoformat()},
        "elder": {"served": "elder-1", "endpoint": "demo", "via": "demo", "question_types": ["choice"],
                  "onboarded": (today - datetime.timedelta(days=30)).isoformat()}}))
    fileio.write_atomic(paths.file("config", "model-overrides.json"), json.dumps({"alpha": {"context_window": 64000}}))
    monkeypatch.setattr(history, "suite_recall", lambda folder: {"beta": (3, 4, 2)})
    glance = {r["alias"]: r for r in bench_of(dash)["glance"]}
    assert glance["alpha"]["context"] == 64000 and glance["alpha"]["context_source"] == "you"
    assert glance["beta"]["context_source"] != "you"
    assert glance["judge"]["connection"] == "hubby" and glance["elder"]["connection"] == "demo"  # GL-4: their via
    assert glance["judge"]["question_types"] == ["noul", "score"]
    assert glance["judge"]["new"] is True and glance["elder"]["new"] is False  # GL-1: `onboarded` within 7 days
    assert (glance["beta"]["suite"], glance["beta"]["suite_tasks"]) == ("3/4", 2)


def test_page_data_escapes_script_ends_shell9(dash):
    fileio.write_atomic(paths.file("config", "retired.json"), json.dumps(
        {"old": {"served": "old", "why": "</script><script>alert(1)</script> <!--<script>", "at": "2026-12-01",
                 "by": "ui"}}))
    text = call(dash, "GET", "/")[2]
    assert "</script><script>alert(1)" not in text and "<\\/script><script>alert(1)<\\/script>" in text
    assert "<!--" not in text.partition("window.BENCH = ")[2].partition(";</script>")[0]
    assert bench_of(dash)["retired"]["old"]["why"] == "</script><script>alert(1)</script> <!--<script>"


def test_logs_never_show_prompts_lg1(dash):
    ask(dash)
    call(dash, "POST", "/api/collection", {"name": "long", "members": ["alpha"], "description": "d " * 140})
    paths.file("runs", "scheduler.log").write_text("05:00 availability: 3 probes\n", encoding="utf-8")
    paths.file("runs", "onboard-20261201T050000-m1.log").write_text("[1/5]\n", encoding="utf-8")
    logs = call(dash, "GET", "/api/logs")[2]
    assert logs["calls"][0]["seats"] == "alpha ok, beta ok" and "Review x=1" not in json.dumps(logs)
    assert logs["changes"][0]["field"] == "collection long" and len(logs["changes"][0]["new"]) == 160
    assert logs["scheduler"] == ["05:00 availability: 3 probes"]
    assert logs["onboarding"] == ["onboard-20261201T050000-m1.log"]


def test_access_log_names_the_caller_never_the_key_srv7(dash, monkeypatch, capsys):
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    key = call(dash, "POST", "/api/gateway-key", {"name": "chat-ui"}, {"Authorization": f"Bearer {TOKEN}"})[2]["key"]
    assert call(dash, "GET", "/v1/models?key=secret", headers={"Authorization": f"Bearer {key}"})[0] == 200
    call(dash, "GET", "/api/stamp", headers={"Authorization": f"Bearer {TOKEN}"})
    log = capsys.readouterr().err
    assert "GET /v1/models 200 chat-ui" in log and "GET /api/stamp 200 admin" in log
    assert key not in log and key[4:12] not in log and "secret" not in log and TOKEN not in log
    monkeypatch.delenv("BENCHWARMERS_ADMIN_TOKEN")
    call(dash, "GET", "/api/stamp")
    assert capsys.readouterr().err == ""  # LOG-4: silent without a login


def test_decision_models_retire_and_restore_whole_mp12_mp15(dash, bench):
    entry = {"served": "judge-1", "endpoint": "demo", "via": "demo", "path": "decisions",
             "question_types": ["noul", "choice"], "onboarded": "2026-12-01"}
    fileio.write_atomic(paths.file("config", "decision-models.json"), json.dumps({"judge": entry}))
    models = {r["alias"]: r for r in call(dash, "GET", "/api/models")[2]["models"]}
    assert models["judge"]["kind"] == "decision" and models["judge"]["role"] == "decision"
    bench.set_model("judge-1", decisions={"probe_noul": {"answer": "no"}})  # MP-7: it cannot score
    errors = call(dash, "POST", "/api/model", {"alias": "judge", "new_question_types": ["noul", "score"]})[2]["errors"]
    assert errors == ["judge did not answer a score question: its reply held no answer to it (null); not added"]
    bench.set_model("judge-1", decisions={"probe_score": {"score": 0.2}})
    assert call(dash, "POST", "/api/model", {"alias": "judge", "new_question_types": ["noul", "score"]})[0] == 200
    asked = [r["body"]["questions"] for r in bench.requests if r["model"] == "judge-1"][-1]
    assert asked == {"probe_score": modeledit.PROBES["score"]}  # the live question, one per type added
    assert call(dash, "POST", "/api/model", {"alias": "judge", "new_question_types": ["noul"]})[0] == 200
    assert fileio.read_json(paths.file("config", "decision-models.json"))["judge"]["question_types"] == ["noul"]
    status, _, answer = call(dash, "POST", "/api/remove", {"alias": "judge"})
    assert status == 200 and answer["sync"] == "" and "config/decision-models.json" in answer["changed"]
    retired = fileio.read_json(paths.file("config", "retired.json"))["judge"]
    assert retired["role"] == "decision" and retired["decision"]["question_types"] == ["noul"]
    assert retired["why"] == "retired by hand"
    assert fileio.read_json(paths.file("config", "decision-models.json")) == {}
    assert call(dash, "POST", "/api/restore", {"alias": "judge"})[0] == 200
    assert fileio.read_json(paths.file("config", "decision-models.json"))["judge"]["served"] == "judge-1"
    assert fileio.read_json(paths.file("config", "model-roles.json"))["models"]["judge"] == "decision"


def test_restore_refuses_when_its_endpoint_is_gone_mp14(dash):
    call(dash, "POST", "/api/remove", {"alias": "gamma"})
    fileio.update(paths.file("config", "endpoints.json"), lambda d: d.__setitem__("other", d.pop("demo")))
    assert call(dash, "POST", "/api/restore", {"alias": "gamma"})[2]["errors"] == [
        "its endpoint demo was removed; add an endpoint named demo again, then restore"]


def test_onboarding_stops_show_until_healthy_mp19_test5(dash):
    fileio.write_atomic(paths.file("metrics", "onboard-issues.json"), json.dumps({
        "alpha": {"at": "2026-12-01T05:00:00", "step": "probe", "failure": "capacity", "detail": "429", "log": "x.log"},
        "beta": {"at": "2026-12-01T05:00:00", "step": "probe", "failure": "weird", "detail": "", "log": "y.log"},
        "nobody": {"at": "2026-12-01T05:00:00", "step": "probe", "failure": "capacity", "detail": "", "log": "z.log"}}))
    found = bench_of(dash)["onboard"]
    assert sorted(found) == ["alpha", "beta"] and found["alpha"]["label"] == "throttled" and found["beta"]["css"] == "err"
    paths.file("perf", "history.csv").write_text(PERF_HEAD + "2026-12-02T05:00:00,alpha,tiny,4,1,1,1,1,9,4,0,0,0,,,\n",
                                                 encoding="utf-8")
    assert sorted(bench_of(dash)["onboard"]) == ["beta"]


# -- scheduler and own-app providers (ST-8, ST-9, ST-12, ST-13, TEST-8, TEST-10) --------------------------------------

def test_scheduler_settings_st9_test8(dash):
    assert call(dash, "POST", "/api/scheduler", {"mode": "sometimes"})[2]["errors"] == ["mode: one of off, log-only, run"]
    assert call(dash, "POST", "/api/scheduler", {"mode": "run", "jobs": {"zeta": False, "alpha": True}})[2]["errors"] == [
        "no job called alpha, zeta"]
    assert call(dash, "POST", "/api/scheduler", {"mode": "log-only", "jobs": {"perf": False, "suite": True}})[0] == 200
    assert fileio.read_json(paths.file("config", "scheduler.json")) == {"mode": "log-only", "jobs": {"perf": False}}
    status = call(dash, "GET", "/api/status")[2]
    assert status["scheduler"] == "log-only" and status["scheduler_jobs"]["perf"] is False
    assert status["scheduler_jobs"]["suite"] is True
    line = change_lines()[-1]
    assert line["field"] == "scheduler" and line["old"] == {"mode": "off", "jobs": {}}
    rows = {r["name"]: r for r in call(dash, "GET", "/api/settings")[2]["scheduler"]["jobs"]}
    assert rows["perf"]["on"] is False and rows["perf"]["next"].startswith("Mon ")


def test_free_only_in_own_app_st13_test10(dash):
    paths.file("runs", "cache").mkdir(parents=True, exist_ok=True)
    paths.file("runs", "cache", "modelsdev.json").write_text('{"groq": {}, "zai": {}}', encoding="utf-8")
    fileio.write_atomic(paths.file("config", "connections.json"), json.dumps({"paid": ["openai"]}))
    assert call(dash, "POST", "/api/own-client-free", {"providers": {"opencode": False}})[0] == 200
    assert fileio.read_json(paths.file("config", "connections.json")) == {
        "paid": ["openai"], "free_in_own_client_only": {"opencode": False}}
    assert call(dash, "POST", "/api/own-client-free", {"providers": {"opencode": True}})[0] == 200
    assert fileio.read_json(paths.file("config", "connections.json")) == {"paid": ["openai"]}
    for body, said in (({"providers": {"nope": True}}, "not a models.dev provider id: nope"),
                       ({"providers": {"groq": "yes"}}, "providers: a map of models.dev provider id to true or false"),
                       ({"providers": ["groq"]}, "providers: a map of models.dev provider id to true or false")):
        assert call(dash, "POST", "/api/own-client-free", body)[2]["errors"] == [said]
    assert call(dash, "POST", "/api/own-client-free", {"providers": {"zai": True}})[0] == 200
    rows = call(dash, "GET", "/api/settings")[2]["own_client"]
    assert [(r["id"], r["on"]) for r in rows] == [("opencode", True), ("opencode-go", True), ("zai", True)]
    assert [(c["old"], c["new"]) for c in change_lines()] == [
        (["opencode", "opencode-go"], ["opencode-go"]), (["opencode-go"], ["opencode", "opencode-go"]),
        (["opencode", "opencode-go"], ["opencode", "opencode-go", "zai"])]


def test_a_refused_disk_write_is_answered_not_dropped(dash):
    paths.file("config", "ui.json").mkdir()  # the file's place is taken: the rename over it fails
    status, _, answer = call(dash, "POST", "/api/theme", {"theme": "dark"})
    assert status == 503 and "could not be written" in answer["errors"][0] and answer["ok"] is False


def test_demo_serves_a_living_dashboard_and_throws_its_folder_away(home):
    """`python serve.py --demo`: the demo bench, the dashboard and the gateway on one port, in one command."""
    env = {**os.environ, "BENCH_PORT": "0"}
    proc = subprocess.Popen([sys.executable, str(ROOT / "serve.py"), "--demo"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        port = int(proc.stdout.readline().split(":")[2].split()[0])
        lines = [proc.stdout.readline() for _ in range(3)]
        folder = Path(next(line for line in lines if "Data folder" in line).split(": ", 1)[1].strip())
        assert folder.is_dir()
        status, _, body = call(port, "POST", "/v1/chat/completions",
                               {"model": "bench/demo", "messages": [{"role": "user", "content": "Is x++ atomic?"}]})
        assert status == 200 and body["choices"][0]["message"]["content"]
        card = call(port, "GET", "/api/gateway-card")[2]
        assert card["panels"][0]["model"] == "bench/demo" and card["owed"] >= 3
        assert bench_of(port)["models"]["terse"]["endpoint"] == "demo"
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.returncode is not None and not folder.exists()


def test_a_fresh_install_answers_every_read_test13(home):
    srv = serve.serve("127.0.0.1", 0)
    port = srv.server_address[1]
    try:
        assert bench_of(port)["first_run"] == "endpoint"
        status = call(port, "GET", "/api/status")[2]
        assert status["default_endpoint"] is None and status["models"] == 0 and status["endpoints"] == 0
        for path in ("/api/collections", "/api/models", "/api/gateway-keys", "/api/gateway-card", "/api/logs",
                     "/api/settings"):
            assert call(port, "GET", path)[2]["ok"] is True, path
        assert call(port, "POST", "/api/collection", {"name": "core", "members": ["x"]})[2]["errors"] == [
            "not chat models on the bench: x"]
    finally:
        srv.shutdown()
        srv.server_close()


def test_first_run_step_onboard_when_endpoints_but_no_models_shell3(bench):
    paths.file("config", "extra-openai-models.yaml").write_text("", encoding="utf-8")
    srv = serve.serve("127.0.0.1", 0)
    port = srv.server_address[1]
    try:
        assert bench_of(port)["first_run"] == "onboard"
        fileio.write_atomic(paths.file("config", "decision-models.json"), json.dumps(
            {"judge": {"served": "judge-1", "endpoint": "demo", "via": "demo", "question_types": ["noul"]}}))
        assert bench_of(port)["first_run"] == "collection"  # a decision model is a model on the bench too
    finally:
        srv.shutdown()
        srv.server_close()


def test_public_url_sets_the_gateway_url_host_and_secure_cookie_srv3(dash, monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_PUBLIC_URL", "https://bench.example.org")
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", TOKEN)
    status, resp, _ = call(dash, "POST", "/login", {"token": TOKEN}, {"Origin": "https://bench.example.org"},
                           host="bench.example.org")
    assert status == 200 and resp.getheader("Set-Cookie").endswith("; Secure")
    jar = {"Cookie": resp.getheader("Set-Cookie").split(";", 1)[0]}
    assert call(dash, "GET", "/api/status", headers=jar, host="bench.example.org")[2]["gateway"] == \
        "https://bench.example.org/v1"


def test_skipped_members_show_on_the_card_without_a_verdict_gw2(dash):
    fileio.append_jsonl(paths.file(*store.CALLS), {
        "panel": "p1", "at": "2026-12-03T10:00:00+00:00", "model": "bench/vision", "shape": "vision", "shape_by": "images",
        "key": "estate", "system": "", "prompt": "what is in it?",
        "seats": [{"call": "p1.member1", "seat": "member", "alias": "seer", "status": "error", "answer": "",
                   "error": "upstream 500", "seconds": 0.4}],
        "skipped": [{"seat": "member", "alias": "tiny", "why": "the image could not be sent"}]})
    panel = call(dash, "GET", "/api/gateway-card")[2]["panels"][0]
    assert panel["key"] == "estate" and panel["skipped"] == [{"seat": "member", "alias": "tiny",
                                                              "why": "the image could not be sent"}]
    assert panel["seats"][0]["status"] == "error" and panel["owed"] == 1
    seat = call(dash, "GET", "/api/gateway-seat?call=p1.member1")[2]
    assert seat["error"] == "upstream 500" and seat["useful"] is None


def test_resp6_writes_refuse_a_file_they_cannot_read(dash):
    """RESP-6: a model write whose file is unreadable refuses, says which file, and leaves it as it was."""
    for path, body, route in ((paths.file("config", "retired.json"), {"alias": "alpha"}, "/api/remove"),
                              (paths.file("config", "model-roles.json"), {"alias": "alpha", "new_ad_hoc": True},
                               "/api/model"),
                              (paths.file("config", "gateway-keys.json"), {"name": "ui-key"}, "/api/gateway-key")):
        path.write_text('{"kept": ')
        status, _, answer = call(dash, "POST", route, body)
        assert status == 400 and answer["ok"] is False, (route, answer)
        assert f"config/{path.name} is not valid JSON" in answer["errors"][0]
        assert path.read_text() == '{"kept": '


def test_shell1_imp3_hand_edited_data_never_breaks_the_page(dash):
    """SHELL-1: `{{script}}` inside the data stays text; IMP-3: values of the wrong type in files a person edits by
    hand give a page (or a said error), never a dropped connection."""
    demo.set_collection("core", ["alpha", "beta"], description="see {{script}} here")
    assert call(dash, "POST", "/api/remove", {"alias": "alpha", "reason": "see {{script}} here"})[0] == 200
    status, _, page = call(dash, "GET", "/")
    data = page.split("window.BENCH = ", 1)[1].split(";</script>", 1)[0]
    assert status == 200 and json.loads(data)  # the page's data is whole JSON
    assert "see {{script}} here" in data and page.count("window.Bench = {B: B") == 1  # the script, once
    retired = fileio.read_json(paths.file("config", "retired.json"))
    retired["alpha"]["at"] = 5
    retired["ghost"] = {"served": None, "at": None}
    fileio.write_atomic(paths.file("config", "retired.json"), json.dumps(retired))
    fileio.write_atomic(paths.file("metrics", "onboard-issues.json"), json.dumps({"beta": {"failure": ["odd"]}}))
    status, _, page = call(dash, "GET", "/")
    assert status == 200 and "window.BENCH" in page, page
    for route in ("/api/models", "/api/status"):
        assert call(dash, "GET", route)[0] in (200, 500)  # answered, whatever the data


def test_mp20_mp21_entered_limits_are_shown_and_kept_by_the_popups_save(dash):
    """MP-20/MP-21: the rate limits a person entered reach the popup (source `you`), so saving another fact with
    the limits as shown keeps them; the glance shows them too (MD-1)."""
    fileio.write_atomic(paths.file("config", "model-overrides.json"), json.dumps({"alpha": {"limits": {"rpm": 30}}}))
    facts = json.loads(call(dash, "GET", "/")[2].split("window.BENCH = ", 1)[1].split(";</script>", 1)[0])["facts"]
    assert facts["alpha"]["limits"] == {"rpm": 30} and facts["alpha"]["sources"]["limits"] == "you (this model)"
    shown = facts["alpha"]["limits"]
    saved = call(dash, "POST", "/api/model-facts", {"alias": "alpha", "facts": {"context_window": 5000,
                                                                                "limits": shown}})
    assert saved[0] == 200
    assert fileio.read_json(paths.file("config", "model-overrides.json"))["alpha"] == {
        "context_window": 5000, "limits": {"rpm": 30}}
    page = json.loads(call(dash, "GET", "/")[2].split("window.BENCH = ", 1)[1].split(";</script>", 1)[0])
    glance = page["glance"]
    rows = {r["alias"]: r for r in (glance["rows"] if isinstance(glance, dict) else glance)}
    assert rows["alpha"]["limits"]["rpm"] == 30


def test_th5_th7_chip_grounds_are_checked_as_the_page_shows_them(monkeypatch):
    """TH-5/TH-7: the status chips' grounds are theme tokens the check reads; a warn ground too dark for ink in
    the dark theme is caught (the reviewer's 3.49:1 at 55 %), the shipped 35 % passes."""
    assert themes.problems("dark") == [] and "--chip-warn:" in themes.css()
    monkeypatch.setitem(themes.CHIPS, "warn", ("signal", 55))
    assert themes.problems("dark") == ["dark: --ink on --chip-warn is 3.49, under 4.5"]


def test_log4_facts_saved_unchanged_say_nothing_changed(dash):
    """LOG-4: saving the facts a model already has writes nothing, logs nothing and reports no change."""
    body = {"alias": "alpha", "facts": {"context_window": 5000}}
    assert call(dash, "POST", "/api/model-facts", body)[2]["changed"] == ["config/model-overrides.json"]
    lines = len(change_lines())
    assert call(dash, "POST", "/api/model-facts", body)[2] == {"ok": True, "errors": [], "changed": []}
    assert len(change_lines()) == lines

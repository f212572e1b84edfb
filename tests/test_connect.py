"""Sign-in flows end to end against a fake provider on 127.0.0.1 (suite-cli-mcp.md CN-1..7, dashboard.md CN-1..8,
OFF-5): key and OAuth with PKCE through a real redirect to the loopback callback, device code, local; the
routes' refusals; the single-use callback and the renewal under its per-key lock, each with two real processes."""

import base64
import datetime
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from benchwarmers.dashboard import serve
from benchwarmers.core import fileio, keys, paths
from benchwarmers.models import endpoints, registry, scoring
from benchwarmers.providers import providers, renewal
from benchwarmers.calling import client
from benchwarmers.admin import connect
from fake_provider import FakeProvider
from test_serve import call, change_lines

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fake():
    with FakeProvider() as fp:
        yield fp


@pytest.fixture
def table(fake, tmp_path, monkeypatch):
    found = {"fakekey": fake.table("fakekey", "key"), "fakeoauth": fake.table("fakeoauth", "oauth"),
             "fakedev": fake.table("fakedev", "device"),
             "fakelocal": {"label": "Fake local", "flow": "local", "base": fake.base + "/v1", "entry": {"kind": "local"}},
             "fakeapp": {**fake.table("fakeapp", "oauth"), "label": "Fake app", "client_id": "",
                         "register": "https://example.test/apps"}}
    where = tmp_path / "providers.json"
    where.write_text(json.dumps(found))
    monkeypatch.setenv(providers.OVERRIDE_ENV, str(where))
    fake.deny = False
    return found


@pytest.fixture
def dash(home, table):
    srv = serve.serve("127.0.0.1", 0)
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def post(port, path, body):
    status, _, answer = call(port, "POST", path, body)
    return status, answer


def follow(url):
    """Open the authorize URL as a browser would: the provider's 302 leads to the dashboard's callback page."""
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.headers, resp.read().decode()


def nothing_secret_written(*secrets):
    written = endpoints.path().read_text() + "".join(json.dumps(c) for c in change_lines())
    written += paths.file("runs", "connect-pending.json").read_text() if paths.file("runs", "connect-pending.json").exists() else ""
    assert secrets and not any(s in written for s in secrets)


def test_cn2_shipped_providers_pass_the_check_and_a_bad_table_is_named():
    assert providers.problems(providers._read(providers.shipped_path())) == []
    bad = {"Bad_Id": {"label": "x", "flow": "key", "base": "http://example.com/v1", "authorize": "https://a",
                      "token": "https://t"},
           "dev": {"label": "d", "flow": "device", "base": "https://b", "token": "https://t", "loopback": "0.0.0.0",
                   "params": [], "entry": {"kind": "hub"}},
           "odd": {"flow": "magic"}}
    assert providers.problems(bad) == [
        "Bad_Id: the id must follow the endpoint-name rule (2-32 of a-z, 0-9, -)",
        "Bad_Id: base must be https (http://example.com/v1)",
        "dev: device URL missing", "dev: flow device needs a client_id or a register hint",
        "dev: loopback is 127.0.0.1 or localhost", "dev: params must be an object",
        "dev: entry kind is one of provider, aggregator, local",
        "odd: flow must be one of key, oauth, device, local"]


def test_cn3_pkce_is_the_s256_of_the_verifier_and_ids_are_random_url_safe():
    v, s = connect.verifier(), connect.new_state()
    expected = base64.b64encode(bytes.fromhex(hashlib.sha256(v.encode()).hexdigest())).decode()
    assert connect.challenge(v) == expected.replace("+", "-").replace("/", "_").rstrip("=")
    assert len(v) == 86 and len(s) == 32 and v != connect.verifier() and "=" not in connect.challenge(v)


def test_cn1_view_lists_providers_with_suggestions_and_what_is_missing(dash, table):
    keys.set_key("fakekey", "someone-elses-key")
    status, _, body = call(dash, "GET", "/api/connect")
    rows = {r["id"]: r for r in body["providers"]}
    assert status == 200 and body["ok"] and {"openrouter", "huggingface", "github", "ollama"} <= set(rows)
    assert rows["fakekey"]["suggest"] == "fakekey-2" and rows["fakedev"]["code"] and not rows["fakekey"]["code"]
    assert rows["fakeapp"]["missing"].startswith("Fake app needs an app of your own: register one at https://example.test/apps")
    assert rows["fakeapp"]["own_id"] == "" and rows["fakeapp"]["shipped"] is False and "register" not in rows["fakekey"]
    assert rows["huggingface"]["missing"] and rows["openrouter"]["missing"] == ""


def test_cn_oauth_with_pkce_through_the_redirect_saves_the_endpoint_once(dash, fake):
    status, body = post(dash, "/api/connect/start", {"provider": "fakeoauth"})
    assert status == 200 and set(body) == {"ok", "errors", "id", "url"}
    assert "code_challenge_method=S256" in body["url"] and f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{dash}%2Fconnect%2Fcallback" in body["url"]
    assert post(dash, "/api/connect/poll", {"id": body["id"]})[1] == {"ok": True, "errors": [], "state": "pending"}
    status, headers, page = follow(body["url"])
    assert status == 200 and "Fake oauth is connected as fakeoauth" in page and "It lists 2 models" in page
    assert headers["Cache-Control"] == "no-store" and headers["Referrer-Policy"] == "no-referrer"
    status, done = post(dash, "/api/connect/poll", {"id": body["id"]})
    assert status == 200 and done["state"] == "done" and done["endpoint"] == "fakeoauth" and done["served"] == 2
    assert post(dash, "/api/connect/poll", {"id": body["id"]})[1]["state"] == "error"  # told once, then forgotten
    entry = endpoints.load()["fakeoauth"]
    record = entry.connect
    assert entry.base == fake.base + "/v1" and entry.kind == "provider" and entry.key == "fakeoauth"
    assert record["provider"] == "fakeoauth" and record["refreshes"] is True and record["client_id"] == "fake-client.1"
    assert 3500 < renewal.left(record) <= 3600
    token, refresh = keys.stored()["fakeoauth"], keys.stored()["fakeoauth.refresh"]
    assert token in fake.tokens and refresh in fake.refresh
    nothing_secret_written(token, refresh)
    assert [(c["by"], c["field"]) for c in change_lines()] == [("connect", "endpoint")]
    # the same callback again: single use, no second exchange
    exchanges = len(fake.posts("/token"))
    again = follow(body["url"].replace(fake.base + "/authorize", fake.base + "/authorize"))[2]
    assert "Not connected" in again and "unknown or has expired" in again and len(fake.posts("/token")) == exchanges
    status, _, row = call(dash, "GET", "/api/endpoints")
    shown = row["endpoints"][0]["connect"]
    assert shown["label"] == "Fake oauth" and shown["flow"] == "oauth" and shown["expired"] is False


def test_cn_key_flow_returns_an_api_key_to_the_state_in_the_path(dash, fake):
    status, body = post(dash, "/api/connect/start", {"provider": "fakekey", "endpoint": " MyKey "})
    assert status == 200 and f"callback_url=http%3A%2F%2F127.0.0.1%3A{dash}%2Fconnect%2Fcallback%2F{body['id']}" in body["url"]
    assert "state=" not in body["url"]
    page = follow(body["url"])[2]
    assert "Fake key is connected as mykey" in page
    done = post(dash, "/api/connect/poll", {"id": body["id"]})[1]
    assert done["state"] == "done" and done["label"] == "Fake key"
    record = endpoints.load()["mykey"].connect
    assert set(record) == {"provider", "at"} and "mykey.refresh" not in keys.stored()
    sent = fake.posts("/token")[-1]
    assert set(sent) == {"code", "code_verifier", "code_challenge_method"}  # JSON, the verifier checked by hashing


def test_cn4_cn8_a_provider_error_is_reported_with_its_description_and_the_hint(dash, fake):
    fake.deny = True
    body = post(dash, "/api/connect/start", {"provider": "fakeoauth"})[1]
    page = follow(body["url"])[2]
    assert "Not connected" in page and "Fake oauth said access_denied: The user said no" in page and "Fake hint" in page
    status, said = post(dash, "/api/connect/poll", {"id": body["id"]})
    assert status == 400 and said["state"] == "error" and said["errors"][0] == "Fake oauth said access_denied: The user said no"
    assert not endpoints.path().exists()
    status, _, page = call(dash, "GET", "/connect/callback?state=nope&code=x")
    assert status == 200 and "This sign-in is unknown or has expired; start it again." in page


def _due_now(sid):
    fileio.update(connect.pending_path(), lambda data: data[sid].update(next_at=0))


def test_cn4_device_code_honours_interval_pending_and_slow_down(dash, fake):
    status, body = post(dash, "/api/connect/start", {"provider": "fakedev"})
    assert status == 200 and body["code"] == "WDJB-MJHT" and body["verify"] == fake.base + "/login/device"
    sid, asked = body["id"], len(fake.posts("/token"))
    assert post(dash, "/api/connect/poll", {"id": sid})[1]["state"] == "pending"
    assert len(fake.posts("/token")) == asked  # the interval (1 s) has not passed: nothing asked
    # comments=False: a sign-in id is random and may start with "_", which read_json drops as a comment
    pending = lambda: fileio.read_json(connect.pending_path(), comments=False)[sid]  # noqa: E731
    _due_now(sid)
    assert post(dash, "/api/connect/poll", {"id": sid})[1]["state"] == "pending" and pending()["interval"] == 1
    _due_now(sid)
    assert post(dash, "/api/connect/poll", {"id": sid})[1]["state"] == "pending" and pending()["interval"] == 6
    _due_now(sid)
    done = post(dash, "/api/connect/poll", {"id": sid})[1]
    assert done["state"] == "done" and done["endpoint"] == "fakedev" and done["served"] == 2
    assert len(fake.posts("/token")) == asked + 3
    assert fake.posts("/token")[-1]["grant_type"] == connect.DEVICE_GRANT
    assert endpoints.load()["fakedev"].connect["client_id"] == "fake-client.1"
    # a key/oauth provider with a device URL signs in by code too; one without says so
    status, said = post(dash, "/api/connect/start", {"provider": "fakeoauth", "code": True})
    assert status == 400 and said["errors"] == ["Fake oauth signs in only through a page on the machine the dashboard "
                                                "runs on; open the dashboard there, or choose API key"]


def test_cn2_local_saves_at_once_and_start_refusals(dash, fake):
    fake.tokens.add("fakelocal")  # the stand-in key a local provider is saved with
    status, body = post(dash, "/api/connect/start", {"provider": "fakelocal"})
    assert status == 200 and body["state"] == "done" and body["note"] == "" and body["endpoint"] == "fakelocal"
    assert keys.stored()["fakelocal"] == "fakelocal" and endpoints.load()["fakelocal"].kind == "local"
    rows = {r["id"]: r for r in call(dash, "GET", "/api/connect")[2]["providers"]}
    assert rows["fakelocal"]["suggest"] == "fakelocal"  # a local provider already added keeps its own name
    keys.set_key("taken", "not-ours")
    post(dash, "/api/endpoint", {"name": "plain", "base": fake.base + "/v1", "key": "fakelocal", "new": True})
    for sent, error in [
            ({"provider": "nope"}, "no provider 'nope'"),
            ({"provider": "fakekey", "endpoint": "plain"}, "plain is already an endpoint: give this one another name, e.g. plain-2"),
            ({"provider": "fakekey", "endpoint": "Bad Name"}, "name: 2-32 lower-case letters, digits or '-', e.g. fakekey"),
            ({"provider": "fakekey", "endpoint": "taken"}, "a key named taken is already in the llm key store: give this "
                                                           "endpoint another name, e.g. taken-2"),
            ({"provider": "fakeapp"}, connect.missing("fakeapp", providers.table()["fakeapp"]))]:
        status, said = post(dash, "/api/connect/start", sent)
        assert status == 400 and said["errors"] == [error], sent


def test_cn5_own_app_client_ids(dash):
    for sent, error in [({"provider": "fakekey", "client_id": "abc"}, "'fakekey' has no app to register"),
                        ({"provider": "fakeapp", "client_id": "no spaces"},
                         "a client id is 3-200 letters, digits or . _ ~ : - (a public id, never a secret)")]:
        assert post(dash, "/api/connect/app", sent)[1]["errors"] == [error]
    assert post(dash, "/api/connect/app", {"provider": "fakeapp", "client_id": "my.app-1"})[0] == 200
    assert providers.own_ids() == {"fakeapp": "my.app-1"}
    rows = {r["id"]: r for r in call(dash, "GET", "/api/connect")[2]["providers"]}
    assert rows["fakeapp"]["missing"] == "" and rows["fakeapp"]["own_id"] == "my.app-1"
    post(dash, "/api/connect/app", {"provider": "fakeapp", "client_id": ""})
    assert providers.own_ids() == {}
    assert [c["new"] for c in change_lines()] == ["fakeapp own", "fakeapp shipped"]


def _processes(code, count=2):
    """Start `count` Pythons on this data folder, each waiting for a line before it runs `code`; go, then outputs."""
    env = {**os.environ}
    started = [subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()\n" + code], cwd=ROOT, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(count)]
    for p in started:  # both are started before either is let go
        p.stdin.write("go\n")
        p.stdin.flush()
    out = []
    for p in started:
        stdout, stderr = p.communicate(timeout=60)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout))
    return out


def test_cn4_a_callback_is_single_use_across_two_processes(dash, fake):
    body = post(dash, "/api/connect/start", {"provider": "fakeoauth"})[1]
    with urllib.request.build_opener(NoRedirect).open(body["url"]) as resp:
        back = resp.headers["Location"]  # the provider's redirect, not followed: two processes race for it
    raw = back.split(f":{dash}", 1)[1]
    exchanges = len(fake.posts("/token"))
    results = _processes(f"import json; from benchwarmers.admin import connect; print(json.dumps(connect.callback({raw!r})))")
    assert sorted(r["ok"] for r in results) == [False, True]
    assert any("unknown or has expired" in r["errors"][0] for r in results if not r["ok"])
    assert len(fake.posts("/token")) == exchanges + 1


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def http_error_302(self, req, fp, code, msg, headers):
        return fp


def _signed_in(dash):
    body = post(dash, "/api/connect/start", {"provider": "fakeoauth"})[1]
    follow(body["url"])
    post(dash, "/api/connect/poll", {"id": body["id"]})


def _expiring(name, seconds):
    soon = (datetime.datetime.now().astimezone() + datetime.timedelta(seconds=seconds)).isoformat(timespec="seconds")
    fileio.update(endpoints.path(), lambda data: data[name]["connect"].update(expires=soon))


def test_cn6_renewal_under_the_per_key_lock_renews_once_across_two_processes(dash, fake):
    _signed_in(dash)
    old_token, old_refresh = keys.stored()["fakeoauth"], keys.stored()["fakeoauth.refresh"]
    _expiring("fakeoauth", 400)
    assert not renewal.due(endpoints.load()["fakeoauth"].connect)  # more than 300 s left: not yet
    _expiring("fakeoauth", 120)
    results = _processes("import json; from benchwarmers.providers import renewal; print(json.dumps(renewal.fresh('fakeoauth')))")
    assert results == ["", ""]
    assert fake.refresh[old_refresh] == 1  # two processes, one renewal: the second found it done under the lock
    stored = keys.stored()
    assert stored["fakeoauth"] not in (old_token, "") and stored["fakeoauth.refresh"] != old_refresh
    record = endpoints.load()["fakeoauth"].connect
    assert renewal.left(record) > 3000 and "renewed" in record
    nothing_secret_written(stored["fakeoauth"], stored["fakeoauth.refresh"])


def test_cn6_a_failed_renewal_ends_the_call_with_sign_in_again(dash, fake):
    _signed_in(dash)
    registry.add_registration("fakem", "fake/m1", "fakeoauth")
    fake.refresh.clear()  # the provider revoked it
    _expiring("fakeoauth", 30)
    assert client.PREFLIGHT[0] is client.renew_signin
    reply = client.chat("fakem", "hello", timeout=20)
    assert "sign in again" in reply["error"] and "refresh token revoked" in reply["error"]
    assert scoring.failure_class(reply["error"]) == "signin" and reply["attempts"] == 0


def test_cn8_open3_the_callback_needs_no_login_and_callbackx_is_not_it(dash, monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_ADMIN_TOKEN", "a-very-long-admin-token-0123456789")
    status, resp, page = call(dash, "GET", "/connect/callback/some-id?code=x")
    assert status == 200 and "unknown or has expired" in page and resp.getheader("Referrer-Policy") == "no-referrer"
    assert call(dash, "GET", "/connect/callbackx?state=x")[0] == 303
    assert call(dash, "GET", "/api/connect")[0] == 401
    assert call(dash, "GET", "/connect/callback?state=x", host="evil.example:80")[0] == 403  # Host-checked still


def test_ep12_the_picker_renews_an_expiring_sign_in_before_listing(dash, fake):
    _signed_in(dash)
    old = keys.stored()["fakeoauth"]
    fake.tokens.discard(old)  # the provider no longer takes the old token: only a renewed one lists
    _expiring("fakeoauth", 60)
    found = call(dash, "GET", "/api/candidates")[2]
    assert "fakeoauth" not in " ".join(found.get("errors") or []) and keys.stored()["fakeoauth"] != old
    assert {"fake/m1", "fake/m2"} <= {c["served"] for c in found["candidates"] if c["endpoint"] == "fakeoauth"}


def test_ep12_the_scripts_that_list_an_endpoint_renew_an_expiring_sign_in_first(dash, fake):
    _signed_in(dash)
    fileio.update(endpoints.path(), lambda data: [entry.update(default=name == "fakeoauth")
                                                  for name, entry in data.items()])
    old = keys.stored()["fakeoauth"]
    fake.tokens.discard(old)
    _expiring("fakeoauth", 60)
    done = subprocess.run([*paths.module_command("scripts.list_served"), "fake/"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "[ MISSING  ] fake/m1" in done.stdout and keys.stored()["fakeoauth"] != old

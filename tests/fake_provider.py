"""A fake sign-in provider on 127.0.0.1 (suite-cli-mcp.md CN-7, dashboard.md OFF-5): authorize, token and device
endpoints answering the shapes real providers answer, and an OpenAI-compatible `/v1/models` that opens only to a
token it issued. PKCE is checked by really hashing the verifier the bench sends against the challenge it sent.

    with FakeProvider() as fp:
        fp.table("fakeoauth", "oauth")     # a provider entry whose every URL points here
"""

import base64
import hashlib
import json
import secrets
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler

from localserver import LocalServer


class FakeProvider(LocalServer):
    def __init__(self):
        self.lock = threading.Lock()
        self.codes = {}  # code -> {"challenge", "redirect", "client_id"}
        self.tokens = set()
        self.refresh = {}  # refresh token -> times used
        self.device = {}  # device code -> answers still to give before the token
        self.seen = []  # (path, fields) of every POST
        self.deny = False  # the authorize page answers error=access_denied
        self.expires_in = 3600
        self.base = self.listen(self._handler())

    def table(self, pid, flow, **more):
        """A provider entry (CN-2) for the override file."""
        entry = {"label": f"Fake {flow}", "flow": flow, "base": self.base + "/v1", "authorize": self.base + "/authorize",
                 "token": self.base + "/token", "entry": {"kind": "provider"}, "hint": "Fake hint: try again."}
        if flow in ("oauth", "device"):
            entry.update(client_id="fake-client.1", scope="inference")
        if flow == "device":
            entry.update(device=self.base + "/device")
            entry.pop("authorize")
        return {**entry, **more}

    def posts(self, path):
        return [fields for p, fields in self.seen if p == path]

    def issue(self):
        token = "tok-" + secrets.token_urlsafe(16)
        self.tokens.add(token)
        return token

    # -- the endpoints ---------------------------------------------------------------

    def authorize(self, query):
        redirect = query.get("redirect_uri") or query.get("callback_url")
        if self.deny:
            sep = "&" if "?" in redirect else "?"
            return redirect + sep + urllib.parse.urlencode({"error": "access_denied", "error_description": "The user said no",
                                                            **({"state": query["state"]} if "state" in query else {})})
        assert query["code_challenge_method"] == "S256"
        code = "code-" + secrets.token_urlsafe(8)
        self.codes[code] = {"challenge": query["code_challenge"], "redirect": redirect, "client_id": query.get("client_id")}
        back = {"code": code, **({"state": query["state"]} if "state" in query else {})}
        return redirect + ("&" if "?" in redirect else "?") + urllib.parse.urlencode(back)

    def token(self, f):
        grant = f.get("grant_type")
        if grant is None:  # the key flow: JSON {code, code_verifier, code_challenge_method}
            return self._exchange(f, key=True)
        if grant == "authorization_code":
            return self._exchange(f, key=False)
        if grant == "refresh_token":
            if f.get("refresh_token") not in self.refresh:
                return 400, {"error": "invalid_grant", "error_description": "refresh token revoked"}
            self.refresh[f["refresh_token"]] += 1
            new_refresh = "ref-" + secrets.token_urlsafe(12)
            self.refresh[new_refresh] = 0
            return 200, {"access_token": self.issue(), "refresh_token": new_refresh, "expires_in": self.expires_in}
        if grant == "urn:ietf:params:oauth:grant-type:device_code":
            answers = self.device.get(f.get("device_code"))
            if answers is None:
                return 400, {"error": "expired_token"}
            if answers:
                return 200, {"error": answers.pop(0)}  # GitHub answers pending/slow_down with 200
            return 200, {"access_token": self.issue(), "token_type": "bearer", "scope": ""}
        return 400, {"error": "unsupported_grant_type"}

    def _exchange(self, f, key):
        found = self.codes.pop(f.get("code"), None)
        if found is None:
            return 400, {"error": "invalid_grant", "error_description": "unknown or used code"}
        digest = hashlib.sha256(f.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != found["challenge"]:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        if key:
            return 200, {"key": self.issue(), "user_id": "u1"}
        if f.get("redirect_uri") != found["redirect"]:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri differs"}
        refresh = "ref-" + secrets.token_urlsafe(12)
        self.refresh[refresh] = 0
        return 200, {"access_token": self.issue(), "refresh_token": refresh, "expires_in": self.expires_in,
                     "token_type": "bearer"}

    def start_device(self, f):
        code = "dev-" + secrets.token_urlsafe(8)
        self.device[code] = ["authorization_pending", "slow_down"]
        return 200, {"device_code": code, "user_code": "WDJB-MJHT", "verification_uri": self.base + "/login/device",
                     "expires_in": 900, "interval": 1}

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                path, _, query = self.path.partition("?")
                if path == "/authorize":
                    with fake.lock:
                        where = fake.authorize(dict(urllib.parse.parse_qsl(query)))
                    self.send_response(302)
                    self.send_header("Location", where)
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                if path == "/v1/models":
                    auth = self.headers.get("Authorization", "")
                    if auth.removeprefix("Bearer ") not in fake.tokens:
                        return self.reply(401, {"error": {"message": "bad token"}})
                    return self.reply(200, {"data": [{"id": "fake/m1"}, {"id": "fake/m2"}]})
                self.reply(404, {"error": "not found"})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                kind = self.headers.get("Content-Type", "")
                fields = json.loads(raw) if kind.startswith("application/json") else dict(urllib.parse.parse_qsl(raw))
                path = self.path.partition("?")[0]
                with fake.lock:
                    fake.seen.append((path, fields))
                    if path == "/token":
                        status, payload = fake.token(fields)
                    elif path == "/device":
                        status, payload = fake.start_device(fields)
                    else:
                        status, payload = 404, {"error": "not found"}
                self.reply(status, payload)

        return Handler

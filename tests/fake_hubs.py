"""Fake hubs on 127.0.0.1 answering the recorded shapes the adapters read (suite-cli-mcp.md HB-5, dashboard.md
OFF-3): Open WebUI, LiteLLM and CLI Proxy API, each with its admin API behind an admin key and the OpenAI-style
model list the hub's endpoint lists. Every admin request is counted (`hits`), so a test can say nothing was sent.
"""

import copy
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler

from localserver import LocalServer

OWUI_ADMIN = "owui-admin-key-0123"
LITELLM_MASTER = "sk-litellm-master-0123"
CPA_MANAGEMENT = "cpa-management-key-0123"


class FakeHub(LocalServer):
    """A hub on its own port; subclasses answer `get(path, query)` and `post(method, path, query, body)`."""

    admin = ""

    def __init__(self):
        self.lock = threading.Lock()
        self.hits = []  # (method, path) of every admin request
        self.reset()
        self.root = self.listen(self._handler())

    def admin_ok(self, headers):
        return headers.get("Authorization", "") == f"Bearer {self.admin}"

    def _handler(self):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def handle_any(self, method):
                path, _, query = self.path.partition("?")
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                with hub.lock:
                    if path.endswith("/models") and path in hub.listing_paths:
                        return self.answer(200, {"data": hub.listing()})
                    hub.hits.append((method, path))
                    status, payload = hub.refusal(self.headers) or hub.route(method, path,
                                                                             dict(urllib.parse.parse_qsl(query)), body)
                self.answer(status, payload)

            def do_GET(self):
                self.handle_any("GET")

            def do_POST(self):
                self.handle_any("POST")

            def do_PATCH(self):
                self.handle_any("PATCH")

        return Handler

    def refusal(self, headers):
        return None if self.admin_ok(headers) else (401, {"detail": "unauthorized"})

    def listing(self):
        return [{"id": i, "object": "model"} for i in self.listed()]


class OpenWebUI(FakeHub):
    admin = OWUI_ADMIN
    listing_paths = ("/api/models",)

    def reset(self):
        self.config = {"ENABLE_OPENAI_API": True,
                       "OPENAI_API_BASE_URLS": ["https://api.groq.com/openai/v1", "https://openrouter.ai/api/v1",
                                                "https://off.example/v1"],
                       "OPENAI_API_KEYS": ["gsk_real_key_one", "sk-or-real-key-two", "sk-off"],
                       "OPENAI_API_CONFIGS": {
                           "0": {"enable": True, "tags": [{"name": "groq"}], "prefix_id": "", "model_ids": ["llama-old"]},
                           "1": {"enable": True, "tags": [{"name": "openrouter"}], "prefix_id": "or", "model_ids": []},
                           "2": {"enable": False, "tags": [{"name": "off"}], "prefix_id": "", "model_ids": []}}}
        self.served = [{"id": "llama-old", "urlIdx": 0}, {"id": "or.shared", "urlIdx": 1}, {"id": "dup", "urlIdx": 1}]
        self.records = [{"id": "llama-old", "name": "Llama old", "base_model_id": None,
                         "meta": {"profile_image_url": "/static/groq.png", "capabilities": {"vision": False},
                                  "defaultFeatureIds": ["web_search"], "tags": [{"name": "groq"}]},
                         "params": {}, "access_control": None, "is_active": True}]

    def listed(self):
        return [m["id"] for m in self.served]

    def listing(self):
        return copy.deepcopy(self.served)

    def route(self, method, path, query, body):
        if path == "/api/version":
            return 200, {"version": "0.6.5"}
        if path == "/openai/config" and method == "GET":
            return 200, copy.deepcopy(self.config)
        if path == "/openai/config/update":
            before = set(self.config["OPENAI_API_KEYS"])
            self.config = copy.deepcopy(body)
            for i, settings in body["OPENAI_API_CONFIGS"].items():  # what Open WebUI serves follows the Model IDs
                for model in settings.get("model_ids") or []:
                    prefix = settings.get("prefix_id")
                    served = f"{prefix}.{model}" if prefix else model
                    if served not in self.listed():
                        self.served.append({"id": served, "urlIdx": int(i)})
            assert set(body["OPENAI_API_KEYS"]) == before
            return 200, self.config
        if path == "/api/v1/models/":
            return 200, copy.deepcopy(self.records)
        if path == "/api/v1/models/create":
            self.records.append(body)
            tag = body["meta"]["tags"][0]["name"]
            index = next(int(i) for i, c in self.config["OPENAI_API_CONFIGS"].items() if {"name": tag} in c["tags"])
            if body["id"] not in self.listed():
                self.served.append({"id": body["id"], "urlIdx": index})
            return 200, body
        if path == "/api/v1/models/model/update":
            self.records = [body if r["id"] == query["id"] else r for r in self.records]
            return 200, body
        return 404, {"detail": "Not Found"}


class LiteLLM(FakeHub):
    admin = LITELLM_MASTER
    listing_paths = ("/v1/models",)

    def reset(self):
        self.db = "connected"
        self.version = "1.74.0"
        self.deployments = [
            {"model_name": "llama-3.3-70b", "litellm_params": {"model": "groq/llama-3.3-70b", "api_base":
             "https://api.groq.com/openai/v1", "api_key": "gsk_****", "timeout": 60, "max_retries": 2,
             "litellm_credential_name": "groq-cred"}, "model_info": {"id": "d1"}},
            {"model_name": "taken-model", "litellm_params": {"model": "openrouter/taken-model"}, "model_info": {"id": "d2"}}]

    def listed(self):
        return [d["model_name"] for d in self.deployments]

    def route(self, method, path, query, body):
        if path == "/health/readiness":
            return 200, {"status": "healthy", "db": self.db, "litellm_version": self.version}
        if path == "/model/info":
            return 200, {"data": copy.deepcopy(self.deployments)}
        if path == "/model/new" and method == "POST":
            self.deployments.append(body)
            return 200, {"model_id": "d3", "model_name": body["model_name"]}
        return 404, {"detail": "Not Found"}


class CLIProxy(FakeHub):
    admin = CPA_MANAGEMENT
    listing_paths = ("/v1/models",)

    def reset(self):
        self.mode = ""  # "404", "403", or "vanish" (another writer drops what we sent)
        self.providers = [{"name": "chutes", "prefix": "ch", "base-url": "https://llm.chutes.ai/v1",
                           "api-key-entries": [{"api-key": "cpk_hidden"}], "models": [{"name": "old", "alias": "old"}]},
                          {"name": "plain", "base-url": "https://plain.example/v1", "models": []}]

    def listed(self):
        return [f"{p['prefix']}/{m['alias']}" if p.get("prefix") else m["alias"] for p in self.providers for m in p["models"]]

    def refusal(self, headers):
        if self.mode in ("404", "403"):
            return int(self.mode), {"error": "nope"}
        return super().refusal(headers)

    def route(self, method, path, query, body):
        if path != "/v0/management/openai-compatibility":
            return 404, {"error": "not found"}
        if method == "PATCH":
            assert set(body) == {"name", "value"} and set(body["value"]) == {"models"}  # only `models` is sent
            provider = next(p for p in self.providers if p["name"] == body["name"])
            provider["models"] = body["value"]["models"][:-1] if self.mode == "vanish" else body["value"]["models"]
            return 200, {"status": "ok"}
        return 200, {"openai-compatibility": copy.deepcopy(self.providers)}

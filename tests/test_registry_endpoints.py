"""Registrations (REG), endpoints (EP) and connections (CONN), with real files and a real upstream."""

import dataclasses
import http.server
import json
import re
import threading

import pytest

from benchwarmers.core import fileio, keys, paths
from benchwarmers.models import connections, endpoints, registry
from benchwarmers.calling import client
from benchwarmers.panel import collections
from benchwarmers.demo.demo import Upstream

SECRET = "sk-registry-test-SECRET-77"


def write_endpoints(data):
    fileio.write_atomic(endpoints.path(), data if isinstance(data, str) else fileio.dumps(data))


def write_json(name, data):
    fileio.write_atomic(paths.file("config", name), fileio.dumps(data))


@pytest.fixture
def up():
    with Upstream({"a": {"answer": "x", "context_window": 8192}, "b/c:free": {"answer": "y"},
                   "gone": {"fail": "404"}}) as server:
        yield server


# ---------------------------------------------------------------- REG


def test_registration_format_reg1():
    write_endpoints({"or": {"base": "https://openrouter.example/api/v1/", "key": "openrouter",
                            "headers": {"HTTP-Referer": "https://bench.example", "X-Title": "bench"}},
                     "local": {"base": "http://127.0.0.1:11434/v1"}})
    registry.add_registration("free-m", "vendor/m:free", "or")
    registry.add_registration("plain", "plain-model", "local")
    assert registry.path().read_text(encoding="utf-8") == (
        "\n- model_id: free-m\n"
        '  model_name: "vendor/m:free"\n'
        '  api_base: "https://openrouter.example/api/v1/"\n'
        "  api_key_name: openrouter\n"
        "  headers:\n"
        '    HTTP-Referer: "https://bench.example"\n'
        '    X-Title: "bench"\n'
        "\n- model_id: plain\n"
        "  model_name: plain-model\n"
        '  api_base: "http://127.0.0.1:11434/v1"\n'
        '  api_key_name: ""\n'
    )
    assert registry.registrations()["free-m"] == registry.Registration(
        "free-m", "vendor/m:free", "https://openrouter.example/api/v1/", "openrouter",
        {"HTTP-Referer": "https://bench.example", "X-Title": "bench"})
    assert registry.registrations()["plain"].api_key_name == ""
    with pytest.raises(ValueError, match="already registered"):
        registry.add_registration("plain", "other", "local")
    with pytest.raises(ValueError, match="no endpoint named 'nope'"):
        registry.add_registration("x", "y", "nope")


# The shapes llm's documentation shows for extra-openai-models.yaml (docs/other-models.md and
# docs/openai-models.md: an aliases list, a quoted api_base, api_key_name, block headers with a bare value),
# then what else llm's own reader (yaml.safe_load) takes: comments after values, flow-style headers, quoted
# values holding ": ", a block list, the flags llm reads (can_stream, supports_tools, vision), a number.
LLM_DOCS = """\
# Models llm and the bench both read.
- model_id: gpt-3.5-turbo-0613
  aliases: ["0613"]

- model_id: orca-openai-compat
  model_name: orca-mini-3b.ggmlv3
  api_base: "http://localhost:8080"
"""
LLM_READS = """\

- model_id: claude
  model_name: anthropic/claude-2
  api_base: "https://openrouter.ai/api/v1"
  api_key_name: openrouter
  headers:
    HTTP-Referer: "https://llm.datasette.io/"
    X-Title: LLM

- model_id: flow   # a comment after a value
  model_name: 'vendor/flow: the sequel'
  api_base: https://flow.example/v1  # another
  api_key_name: flow
  headers: {X-Title: "bench: a panel", "HTTP-Referer": https://bench.example}
  aliases:
    - fl
    - flo
  can_stream: false
  supports_tools: true
  vision: true
- model_id: numbered
  model_name: 3.5
"""
Registration = registry.Registration
READ_AS = {
    "gpt-3.5-turbo-0613": Registration("gpt-3.5-turbo-0613", extra={"aliases": ["0613"]}),
    "orca-openai-compat": Registration("orca-openai-compat", "orca-mini-3b.ggmlv3", "http://localhost:8080"),
    "claude": Registration("claude", "anthropic/claude-2", "https://openrouter.ai/api/v1", "openrouter",
                           {"HTTP-Referer": "https://llm.datasette.io/", "X-Title": "LLM"}),
    "flow": Registration("flow", "vendor/flow: the sequel", "https://flow.example/v1", "flow",
                         {"X-Title": "bench: a panel", "HTTP-Referer": "https://bench.example"},
                         {"aliases": ["fl", "flo"], "can_stream": False, "supports_tools": True, "vision": True}),
    "numbered": Registration("numbered", "3.5"),
}


def test_the_file_is_read_as_llm_reads_it_reg2():
    """Issue 13, item 9: YAML, not a line parser; a repeated alias still merges into the first (REG-2)."""
    assert registry.parse(LLM_DOCS + LLM_READS) == READ_AS
    merged = registry.parse(LLM_READS + "- model_id: claude\n  api_key_name: other\n- model_name: no-id\n- 7\n")
    assert list(merged) == ["claude", "flow", "numbered"]
    assert merged["claude"] == dataclasses.replace(READ_AS["claude"], api_key_name="other")
    assert registry.parse("") == {} and registry.parse("# only a comment\n") == {}


def test_llm_itself_reads_those_shapes_the_same(llmdir):
    """The same text in llm's folder: the real llm package names the same served model, base and headers."""
    import llm

    (llmdir / "extra-openai-models.yaml").write_text(LLM_READS, encoding="utf-8")
    for alias in ("claude", "flow"):
        model, ours = llm.get_model(alias), READ_AS[alias]
        assert (model.model_name, model.api_base, model.headers) == (ours.model_name, ours.api_base, ours.headers)
    assert llm.get_model("flo").model_id == "flow" and llm.get_model("flow").can_stream is False
    assert llm.get_model("flow").supports_tools and llm.get_model("flow").vision


def test_a_broken_file_is_named_with_its_line_and_fails_no_request(up):
    """A file llm could not read registers nothing and says why, naming the file and the line: in a call's
    error (after the ERR words classifiers read), on /health and to a writer; no call or request raises."""
    write_endpoints({"demo": {"base": up.base_url}})
    registry.add_registration("a", "a", "demo")
    good = registry.path().read_text(encoding="utf-8")
    fileio.write_atomic(registry.path(), good + "- model_id: b\n  model_name: a: b\n")
    problem = ("config/extra-openai-models.yaml is not valid YAML (line 7, column 16: mapping values are not "
               "allowed here); fix it or restore it — no model can be called until then")
    assert registry.registrations() == {} and registry.problem() == problem
    assert client.chat("a", "hi")["error"] == f"Error: client failed: no model is registered as 'a': {problem}"
    assert problem in collections.config_problems()  # on /health, and said once on stderr
    with pytest.raises(ValueError, match=r"not valid YAML \(line 7, column 16"):
        registry.add_registration("c", "c", "demo")
    fileio.write_atomic(registry.path(), "model_id: a\nmodel_name: a\n")
    assert registry.problem().startswith(
        "config/extra-openai-models.yaml is not a list of registrations (`- model_id: ...` blocks); it holds a dict")
    fileio.write_atomic(registry.path(), good)
    assert registry.problem() == "" and client.chat("a", "hi")["text"] == "x"
    assert collections.config_problems() == []


def test_the_writers_keep_every_line_they_do_not_own_reg1():
    """Blocks are appended and taken out as text: comments, styles and other blocks stay as written."""
    write_endpoints({"p": {"base": "https://p.example/v1", "key": "p"}})
    lone = "-\n  model_id: lone\n  model_name: x\n"
    fileio.write_atomic(registry.path(), LLM_DOCS + LLM_READS + lone)
    registry.add_registration("m1", "one", "p")
    assert registry.remove_registration("claude") and registry.remove_registration("flow")
    assert registry.remove_registration("lone") and not registry.remove_registration("lone")
    kept = LLM_DOCS + "- model_id: numbered\n  model_name: 3.5\n"
    assert registry.path().read_text(encoding="utf-8") == kept + registry.block("m1", "one", endpoints.entry("p"))
    assert list(registry.registrations()) == ["gpt-3.5-turbo-0613", "orca-openai-compat", "numbered", "m1"]
    fileio.write_atomic(registry.path(), "[{model_id: a, model_name: x}, {model_id: b}]\n")
    assert list(registry.registrations()) == ["a", "b"]
    with pytest.raises(ValueError, match="not written as `- model_id:` blocks"):
        registry.add_registration("m1", "one", "p")
    with pytest.raises(ValueError, match="shares a line"):
        registry.remove_registration("a")


def test_readers_reg3_reg4_reg5_and_the_stat_cache():
    assert registry.registrations() == {} and registry.registry() == [] and registry.names() == {}
    write_endpoints({"p": {"base": "https://p.example/v1", "key": "p"}})
    registry.add_registration("m1", "p/one", "p")
    fileio.write_atomic(registry.path(), registry.path().read_text() + registry.block(
        "m2", "two", endpoints.Endpoint("e", "https://elsewhere.example/v1", "e")))
    first = registry.registrations()
    assert registry.registrations() is first  # unchanged file: not parsed again
    assert registry.registered_models() == ["m1", "m2"]
    assert registry.names() == {"m1": "p/one", "m2": "two"}
    assert registry.registry() == [{"alias": "m1", "served": "p/one", "endpoint": "p"},
                                   {"alias": "m2", "served": "two", "endpoint": "?"}]
    assert registry.remove_registration("m1") is True and registry.remove_registration("m1") is False
    assert registry.registered_models() == ["m2"]
    assert registry.path().read_text().startswith("\n- model_id: m2\n")


def test_options_reg8():
    write_json("model-options.json", {"m": {"max_tokens": 64, "temperature": 0.3}, "bad": [1], "_why": "x"})
    assert registry.options("m") == {"max_tokens": 64, "temperature": 0.3}
    assert registry.options("bad") == {} and registry.options("none") == {}


def test_sync_with_llms_folder_reg9(llmdir):
    with pytest.raises(FileNotFoundError):
        registry.sync_to_llm()
    write_endpoints({"p": {"base": "https://p.example/v1", "key": "p"}})
    registry.add_registration("m1", "one", "p")
    assert registry.in_sync() is False
    assert registry.sync_to_llm().startswith("copied")
    assert registry.in_sync() and list(llmdir.glob("*.bak")) == []
    assert registry.sync_to_llm() == "identical: nothing to copy"
    registry.add_registration("m2", "two", "p")
    assert "kept as extra-openai-models.yaml." in registry.sync_to_llm()
    backups = list(llmdir.glob("*.bak"))
    assert len(backups) == 1 and re.fullmatch(r"extra-openai-models\.yaml\.\d{8}T\d{6}\.bak", backups[0].name)
    assert "m2" not in backups[0].read_text() and "m2" in registry.llm_path().read_text()
    registry.remove_registration("m2")
    registry.pull_from_llm()
    assert registry.registered_models() == ["m1", "m2"]


# ---------------------------------------------------------------- EP


def test_load_ep1():
    assert endpoints.load() == {}
    write_endpoints({})
    assert endpoints.load() == {}
    write_endpoints("{not json")
    with pytest.raises(RuntimeError, match=r"endpoints\.json cannot be read: "):
        endpoints.load()
    write_endpoints("[1, 2]")
    with pytest.raises(RuntimeError, match=r"endpoints\.json is not a JSON object of endpoints"):
        endpoints.load()
    assert registry.entry_of("anything") == endpoints.Endpoint("") and endpoints.find_hub("litellm") is None
    write_endpoints({"_why": "a comment", "a": {"base": "https://a.example/v1"}})
    assert list(endpoints.load()) == ["a"]


def test_default_ep2_and_fields_ep13(monkeypatch):
    write_endpoints({})
    with pytest.raises(RuntimeError) as failed:
        endpoints.default()
    assert str(failed.value).startswith("no endpoints configured:")
    assert "scripts.init --endpoint NAME BASE_URL" in str(failed.value) and "Endpoints page" in str(failed.value)
    write_endpoints({"a": {"base": "https://a.example/v1/", "key": "a-key"}, "b": {"base": "https://b/v1"}})
    assert endpoints.default() == "a"
    write_endpoints({"a": {"base": "https://a.example/v1/", "key": "a-key"},
                     "b": {"base": "https://b.example/v1", "default": True}})
    assert endpoints.default() == "b" and endpoints.base() == "https://b.example/v1"
    assert endpoints.base("a") == "https://a.example/v1" and endpoints.key("a") == ""
    monkeypatch.setenv("BENCHWARMERS_KEY_A_KEY", "secret-a")
    assert endpoints.key("a") == "secret-a"


def test_kinds_and_hubs_ep3_to_ep6():
    write_endpoints({
        "owui": {"base": "http://10.0.0.5:3000/api/", "default": True},
        "lite": {"base": "https://lite.example/v1", "kind": "hub", "hub": "litellm"},
        "ollama": {"base": "http://localhost:11434/v1"},
        "or": {"base": "https://openrouter.example/api/v1", "kind": "aggregator"},
        "odd": {"base": "https://odd.example/v1", "kind": "weird"},
    })
    assert [endpoints.kind(n) for n in ("owui", "lite", "ollama", "or", "odd")] == [
        "hub", "hub", "local", "aggregator", "provider"]
    assert endpoints.hub("owui") == "openwebui" and endpoints.hub("lite") == "litellm" and endpoints.hub("or") == ""
    assert endpoints.find_hub("litellm") == "lite" and endpoints.find_hub("openwebui") == "owui"
    assert endpoints.find_hub("cliproxy") is None
    assert endpoints.recorded_whole("owui") and not endpoints.recorded_whole("ollama")
    assert endpoints.snapshot_key("m", "owui") == "m" and endpoints.snapshot_key("m", "or") == "m@or"


def test_auth_headers_and_names_ep7_ep8():
    assert endpoints.auth_headers("anthropic", "s") == {"x-api-key": "s"}
    assert endpoints.auth_headers("gemini", "s") == {"x-goog-api-key": "s"}
    assert endpoints.auth_headers("responses", "s") == {"Authorization": "Bearer s"}
    assert endpoints.valid_name("ab") and endpoints.valid_name("a" * 32) and not endpoints.valid_name("a" * 33)
    assert not endpoints.valid_name("Ab") and not endpoints.valid_name("-ab") and not endpoints.valid_name("a_b")


def test_endpoint_of_a_registration_ep9_ep10():
    write_endpoints({"or-1": {"base": "https://or.example/v1", "key": "or-1"},
                     "or-2": {"base": "https://or.example/v1/", "key": "or-2"}})
    reg = registry.Registration("m", api_base="https://or.example/v1/", api_key_name="or-2")
    assert endpoints.endpoint_name(reg) == "or-2"
    assert endpoints.endpoint_name(registry.Registration("m", api_base="https://or.example/v1", api_key_name="x")) \
        == "or-1"
    assert endpoints.endpoint_name(registry.Registration("m", api_base="https://else.example/v1")) is None
    assert endpoints.endpoint_name(None) is None
    registry.add_registration("m", "served", "or-2")
    assert registry.endpoint_of("m") == "or-2" and registry.endpoint_of("unknown") is None
    assert registry.entry_of("m").stored == {"base": "https://or.example/v1/", "key": "or-2"}
    assert registry.entry_of("unknown") == endpoints.Endpoint("")


def test_list_models_ep11_ep12(up, monkeypatch):
    write_endpoints({"demo": {"base": up.base_url + "/", "key": "demo", "unlisted_models": ["hidden-one"],
                              "headers": {"X-Title": "bench"}}})
    monkeypatch.setenv("BENCHWARMERS_KEY_DEMO", SECRET)
    served = endpoints.models("demo")
    assert set(served) == {"a", "b/c:free", "hidden-one"} and served["a"]["context_length"] == 8192
    asked = up.requests[-1]
    assert asked["path"] == "/v1/models" and asked["headers"]["authorization"] == f"Bearer {SECRET}"
    assert asked["headers"]["x-title"] == "bench"
    listed = [{"id": "x"}, {"id": "y", "visibility": "hidden"}, "junk", {"name": "no id"}]
    rows = endpoints.rows_of(endpoints.Endpoint("e"), listed)
    assert list(rows) == ["x"]


class Listing(http.server.BaseHTTPRequestHandler):
    """Answers GET by path: a Gemini listing, a bare list, or a redirect to the other origin."""

    protocol_version = "HTTP/1.1"
    seen = []
    other = ""

    def log_message(self, *args):
        pass

    def do_GET(self):
        Listing.seen.append((self.path, dict(self.headers)))
        if self.path.startswith("/gemini/models"):
            body = {"models": [{"name": "models/gemini-x", "supportedGenerationMethods": ["generateContent"]},
                               {"name": "models/embed", "supportedGenerationMethods": ["embedContent"]}]}
            return self.reply(200, body)
        if self.path == "/bare":
            return self.reply(200, [{"id": "listed"}])
        self.send_response(307)
        self.send_header("Location", Listing.other + "/steal")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def listing():
    servers = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), Listing) for _ in range(2)]
    for server in servers:
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    urls = [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]
    Listing.seen, Listing.other = [], urls[1]
    yield urls
    for server in servers:
        server.shutdown()
        server.server_close()


def test_gemini_bare_list_and_redirects_ep11_improvement4(listing):
    here, other = listing
    gemini = endpoints.Endpoint("g", here + "/gemini", api="gemini")
    assert list(endpoints.list_models(gemini, SECRET)) == ["gemini-x"]
    path, headers = Listing.seen[-1]
    assert path == "/gemini/models?pageSize=1000" and headers["x-goog-api-key"] == SECRET
    assert "Authorization" not in headers
    anthropic = endpoints.Endpoint("a", here + "/x", api="anthropic", models_url=here + "/bare")
    assert list(endpoints.list_models(anthropic, SECRET)) == ["listed"]
    assert Listing.seen[-1][1]["anthropic-version"] == "2023-06-01" and Listing.seen[-1][1]["x-api-key"] == SECRET
    with pytest.raises(client.HTTPError) as failed:
        endpoints.list_models(endpoints.Endpoint("m", here + "/moved"), SECRET)
    assert failed.value.code == 307
    assert [p for p, _ in Listing.seen if p == "/steal"] == []  # the key never reached the other origin


def test_version_note_ep15():
    assert endpoints.version_note("openwebui", "v0.6.5", ["0.6", "0.5"]) == ""
    assert endpoints.version_note("openwebui", "0.6", ["0.6"]) == ""
    note = endpoints.version_note("openwebui", "0.60.1", ["0.6"])
    assert "Open WebUI 0.60.1" in note and "0.6" in note
    assert "did not report a version" in endpoints.version_note("cliproxy", None, ["6.1"])


def test_listing_command_ep16(up, capsys, monkeypatch):
    write_endpoints({"demo": {"base": up.base_url, "key": "demo", "default": True},
                     "dead": {"base": "http://127.0.0.1:9/v1", "key": "dead"},
                     "keyless": {"base": "http://127.0.0.1:9/v1"}})
    monkeypatch.setenv("BENCHWARMERS_KEY_DEMO", SECRET)
    assert endpoints.main([]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"demo (default)  {up.base_url}  key set  2 served"
    assert out[1] == "dead  http://127.0.0.1:9/v1  key MISSING  unreachable (ConnectionRefusedError)"
    assert out[2] == "keyless  http://127.0.0.1:9/v1  no key  unreachable (ConnectionRefusedError)"
    assert SECRET not in "\n".join(out)


# ---------------------------------------------------------------- CONN


def test_connections_conn1_to_conn3():
    assert connections.load() == {} and connections.facts()["paid"] == []
    write_json("connections.json", {"paid": ["groq", 3], "preferred": "not a list", "hosts": {"10.0.0.5": "lan"}})
    facts = connections.facts()
    assert facts["paid"] == ["groq"] and facts["preferred"] == [] and facts["hosts"] == {"10.0.0.5": "lan"}
    assert facts["models_dev"] == {} and facts["allow_paid"] == []

    write_endpoints({"owui": {"base": "http://10.0.0.5:3000/api", "key": "owui", "default": True},
                     "groq": {"base": "https://api.groq.example/openai/v1", "key": "groq"}})
    registry.add_registration("tagged", "llama-x", "owui")
    registry.add_registration("untagged", "qwen-y", "owui")
    registry.add_registration("direct", "gemma-z", "groq")
    write_json("provider-tags.json", {"llama-x": "openrouter/deepinfra", "decided-served": "nvidia-api"})
    write_json("decision-models.json", {"decider": {"served": "decided-served", "endpoint": "owui"}})
    assert connections.full_tag_of("tagged") == "openrouter/deepinfra"
    assert connections.connection_of("tagged") == "openrouter"
    assert connections.connection_of("untagged") == "?"  # never a hub's name
    assert connections.connection_of("direct") == "groq"
    assert connections.connection_of("decider") == "nvidia-api"
    assert connections.connection_of("nobody") == "?"


def test_registration_headers_reach_the_upstream_cl3(up):
    write_endpoints({"demo": {"base": up.base_url, "key": "demo", "headers": {"X-Title": "bench"}}})
    registry.add_registration("a", "a", "demo")
    keys.set_key("demo", SECRET)
    assert client.chat("a", "hi")["text"] == "x"
    sent = up.requests[-1]["headers"]
    assert sent["x-title"] == "bench" and sent["authorization"] == f"Bearer {SECRET}"


def test_reg1_reg8_reg9_what_is_synced_is_what_llm_calls(up, llmdir, monkeypatch):
    """The yaml REG-1 writes, copied by the sync, is read by the real llm package: served name,
    base, key and headers all reach the upstream; pushed options are sent as llm's defaults."""
    from benchwarmers.calling import llm_backend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_endpoints({"demo": {"base": up.base_url, "key": "demo", "headers": {"X-Title": "bench"}}})
    registry.add_registration("alias-c", "b/c:free", "demo")
    write_json("model-options.json", {"alias-c": {"temperature": 0.25, "max_tokens": 64}, "bad": "x"})
    (llmdir / "model_options.json").write_text('{"other": {"temperature": 1}, "alias-c": {"top_p": 0.5}}')
    keys.set_key("demo", SECRET)
    registry.sync_to_llm()
    assert registry.push_options() == 2
    assert json.loads((llmdir / "model_options.json").read_text()) == {
        "other": {"temperature": 1}, "alias-c": {"top_p": 0.5, "temperature": 0.25, "max_tokens": 64}}
    result = llm_backend.ask("alias-c", "hi", timeout=30)
    assert (result["path"], result["error"], result["text"]) == ("inprocess", "", "y")
    sent = up.requests[-1]
    assert sent["body"]["model"] == "b/c:free" and sent["headers"]["x-title"] == "bench"
    assert sent["headers"]["authorization"] == f"Bearer {SECRET}"
    assert (sent["body"]["temperature"], sent["body"]["max_tokens"], sent["body"]["top_p"]) == (0.25, 64, 0.5)
    write_json("model-options.json", {})
    assert registry.push_options() == 0


def test_endpoint_helpers_ep_kinds_headers_names_listings():
    """EP-3 kinds by address, each API's auth header, EP-2 names, listing URLs and rows, hub version notes."""
    assert endpoints.inferred_kind("http://10.0.0.5:3000/api/") == "hub"
    assert endpoints.inferred_kind("http://127.0.0.1:11434/v1") == "local"
    assert endpoints.inferred_kind("https://api.example.com/v1") == "provider"
    assert endpoints.auth_headers("anthropic", "s") == {"x-api-key": "s"}
    assert endpoints.auth_headers("gemini", "s") == {"x-goog-api-key": "s"}
    assert endpoints.auth_headers("chat", "s") == {"Authorization": "Bearer s"}
    assert endpoints.valid_name("my-hub") and not any(map(endpoints.valid_name, ("a", "-x", "A1")))
    gemini_base = endpoints.Endpoint("g", "https://g.example/v1beta/", api="gemini")
    assert endpoints.listing_url(gemini_base).endswith("/models?pageSize=1000")
    rows = {"data": [{"id": "a"}, {"id": "b", "visibility": "hidden"}, {"id": ""}]}
    assert endpoints.rows_of(endpoints.Endpoint("e"), rows) == {"a": {"id": "a"}}
    gemini = {"models": [{"name": "models/g", "supportedGenerationMethods": ["generateContent"]},
                         {"name": "models/e", "supportedGenerationMethods": ["embedContent"]}]}
    assert list(endpoints.rows_of(endpoints.Endpoint("g", api="gemini"), gemini)) == ["g"]
    assert endpoints.version_note("litellm", "v1.74.3", ["1.74"]) == ""
    assert "1.80.0" in endpoints.version_note("litellm", "1.80.0", ["1.74"])
    assert "did not report" in endpoints.version_note("openwebui", "", ["0.6"])

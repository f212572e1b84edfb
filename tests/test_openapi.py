"""`GET /openapi.json` (issue 33, OAS-1..4): an OpenAPI 3.1 document generated from the route table on both ports,
valid, with examples captured from the demo bench that still match it, and Schemathesis finding nothing against a
real gateway and a real dashboard, each serving the demo bench in its own process (`--demo`)."""

import http.client
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from openapi_spec_validator import validate

from benchwarmers.core import errors, paths
from benchwarmers.dashboard import serve
from benchwarmers.scripts import openapi_examples
from benchwarmers.server import gateway, openapi

SERVERS = {"gateway": "benchwarmers.server.gateway", "dashboard": "benchwarmers.dashboard.serve"}
SITES = {"gateway": gateway.GATEWAY, "dashboard": serve.DASHBOARD}
CONFIG = Path(__file__).with_name("schemathesis.toml")
# Every check Schemathesis has, but two that test something other than the document (tests/schemathesis.toml
# says why): `unsupported_method` wants a 405 where the contract gives the HTTP library's 501 (SRV-2, GW-9,
# RT-3), `positive_data_acceptance` a 2xx for any body the schema allows, which may name no collection (404).
# The coverage phase is left out for time: its boundary cases are a thousand panels on the gateway (four minutes
# on two cores); what it found when run by hand is fixed (docs/openapi.md).
SCHEMATHESIS = ["--checks", "all", "--exclude-checks", "unsupported_method,positive_data_acceptance",
                "--phases", "examples,fuzzing,stateful", "--workers", "1", "--no-shrink", "--request-timeout", "60",
                "--seed", "33"]


def start(module, env):
    """`python -m <module> --demo --port 0`: its port, read off the line it prints once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", module, "--demo", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=env)
    line = proc.stdout.readline()
    found = re.search(r"//[^:/]+:(\d+)", line)
    if not found:
        proc.kill()
        raise AssertionError(f"{module} --demo printed {line!r}")
    return proc, int(found.group(1))


@pytest.fixture(scope="module")
def ports(tmp_path_factory):
    """The demo bench's gateway and dashboard, each its own process, upstream and throwaway folder."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("BENCHWARMERS_KEY") and name not in ("BENCHWARMERS_ADMIN_TOKEN",
                                                                        "BENCHWARMERS_REQUIRE_KEYS")}
    env["LLM_USER_PATH"] = str(tmp_path_factory.mktemp("llm"))
    started = {name: start(module, env) for name, module in SERVERS.items()}
    yield {name: port for name, (_, port) in started.items()}
    for proc, _ in started.values():
        proc.terminate()
        proc.wait(30)


def fetch(port, path="/openapi.json"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request("GET", path)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, response.getheader("Content-Type"), json.loads(raw)


@pytest.mark.parametrize("name", SERVERS)
def test_each_port_serves_a_valid_document_of_every_row_it_routes(ports, name):
    """OAS-1, OAS-2: valid OpenAPI 3.1, every row of the port's table at each path the port routes to it (the
    dashboard: not the gateway's unprefixed aliases, ROUTE-4), the catch-alls said in the description."""
    status, media, document = fetch(ports[name])
    assert status == 200 and media.startswith("application/json")
    validate(document)
    assert document["openapi"] == "3.1.0" and "HEAD" in document["info"]["description"]
    site = SITES[name]
    for row in site.table:
        shown = openapi.shapes(site, row)
        assert shown or row.doc.shown == "", row.path
        for shape in shown:
            operation = document["paths"][openapi.templated(shape)][row.method.lower()]
            assert operation["summary"] and operation["responses"], shape
    assert ("/chat/completions" in document["paths"]) is (name == "gateway")
    assert ("/api/settings" in document["paths"]) is (name == "dashboard")


def test_each_operation_says_its_statuses_bodies_and_credentials(ports):
    """OAS-1: the statuses the checks and the handler answer, each described by the error table and shaped as the
    port answers it; streams by Content-Type; the key in every header form; a panel's call ids linked to
    `/bench/verdict`; a captured example on each operation."""
    _, _, gw = fetch(ports["gateway"])
    _, _, dash = fetch(ports["dashboard"])
    chat = gw["paths"]["/v1/chat/completions"]["post"]
    assert set(chat["responses"]) >= {"200", "400", "401", "403", "404", "411", "413", "415", "429", "500", "503"}
    assert chat["responses"]["401"]["description"] == errors.MEANINGS[401]
    assert chat["responses"]["400"]["content"]["application/json"]["schema"]["required"] == ["error"]
    assert set(chat["responses"]["200"]["content"]) == {"application/json", "text/event-stream"}
    assert chat["responses"]["200"]["links"]["verdict"]["operationId"] == "post_bench_verdict"
    assert chat["responses"]["200"]["content"]["application/json"]["example"]["bench"]["seats"]
    assert chat["requestBody"]["content"]["application/json"]["example"]["model"] == "bench/demo"
    assert "application/x-ndjson" in gw["paths"]["/api/chat"]["post"]["responses"]["200"]["content"]
    gemini = gw["paths"]["/v1beta/models/{collection}:streamGenerateContent"]["post"]
    assert {"googKeyQuery": []} in gemini["security"] and {} in gemini["security"]  # keys not required here
    assert {"apiKeyHeader": []} in chat["security"] and {"googKeyQuery": []} not in chat["security"]
    settings = dash["paths"]["/api/settings"]["get"]
    assert settings["responses"]["401"]["content"]["application/json"]["schema"]["required"] == ["ok", "errors"]
    assert dash["components"]["securitySchemes"]["session"]["name"] == f"bw_session_{ports['dashboard']}"
    assert dash["paths"]["/health"]["get"]["security"] == []
    for document in (gw, dash):
        for path, methods in document["paths"].items():
            for method, operation in methods.items():
                examples = [media for reply in operation["responses"].values()
                            for media in reply.get("content", {}).values() if "example" in media]
                assert examples or path == "/openapi.json" or (method, path) == ("get", "/login"), (method, path)


def test_with_keys_required_no_empty_requirement_is_left(monkeypatch):
    """OAS-1: the document says the credentials the port asks for now: `{}` (none) goes once keys are required."""
    monkeypatch.setenv("BENCHWARMERS_REQUIRE_KEYS", "1")
    document = openapi.document(gateway.GATEWAY, 8123)
    assert {} not in document["paths"]["/v1/models"]["get"]["security"]
    assert document["paths"]["/health"]["get"]["security"] == []


def test_the_captured_examples_still_match_the_live_server(ports):
    """OAS-3: every operation asked again on the live dashboard has the captured status, Content-Type and fields,
    and every captured JSON reply is valid against the document's schema for its status."""
    live = openapi_examples.capture(ports["dashboard"])
    assert openapi_examples.differences(openapi.examples(), live) == []
    _, _, document = fetch(ports["dashboard"])
    for key, entry in openapi.examples().items():
        method, path = key.split(" ", 1)
        row = next(row for row in serve.DASHBOARD.table if (row.method, row.path) == (method, path))
        shape = openapi.templated((row.doc.shown or row.path))
        reply = document["paths"][shape][method.lower()]["responses"][str(entry["status"])]
        if entry["media"] == "application/json":
            jsonschema.validate(entry["reply"], reply["content"]["application/json"]["schema"])


def test_the_examples_file_ships_with_the_ui():
    """OAS-3: the document's examples are read through `paths.CODE` from a file the package data takes."""
    assert openapi.EXAMPLES == paths.CODE / "ui" / "openapi-examples.json" and openapi.EXAMPLES.is_file()


@pytest.mark.parametrize("name", SERVERS)
def test_schemathesis_finds_nothing(ports, name, tmp_path):
    """OAS-4: no server error, no undocumented status or Content-Type, no reply off its schema, no request the
    schema forbids accepted, the stateful links (a panel's call ids into `/bench/verdict`) followed."""
    command = [sys.executable, "-c", "from schemathesis.cli import schemathesis; schemathesis()",
               "--config-file", str(CONFIG), "run", f"http://127.0.0.1:{ports[name]}/openapi.json", *SCHEMATHESIS]
    done = subprocess.run(command, capture_output=True, text=True, timeout=400, env={**os.environ, "NO_COLOR": "1"},
                          cwd=tmp_path)  # its caches (.schemathesis, .hypothesis) go there, not into the checkout
    summary = done.stdout[done.stdout.rfind("SUMMARY"):]
    print(summary)
    assert done.returncode == 0, done.stdout[-6000:]
    assert re.search(r"(\d+) generated, \1 passed", summary), summary

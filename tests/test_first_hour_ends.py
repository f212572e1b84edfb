"""Issue 16's dead ends mended, each as behaviour through the real gateway (items 4 and 5): a reply-mode typo
names the valid suffixes, an unknown nominee is said in the reply's text (merged replies too), the heading's
shape reason reads for a newcomer, `response_format` ignored by a panel is said in `bench.notes`, the demo's
footer carries its data folder, and `paths` says why the folder was chosen."""

import json
import subprocess
import sys
import urllib.error
import urllib.request

from benchwarmers.core import fileio, paths
from benchwarmers.demo import demo

PROMPT = "Is x = x + 1 right?"


def ask(gateway, body):
    request = urllib.request.Request(gateway + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def message(text):
    return [{"role": "user", "content": text}]


def test_a_reply_mode_typo_lists_the_suffixes(gateway):
    demo.set_collection("core", ["alpha", "beta"], description="two reviewers")
    status, body = ask(gateway, {"model": "bench/core:foo", "messages": message(PROMPT)})
    assert status == 404
    assert body["error"]["message"].startswith("'bench/core:foo' is not a collection here. ':foo' is not a reply mode: "
                                               "after a collection's name put :all, :merged, :route, :council or nothing.")
    status, body = ask(gateway, {"model": "bench/nothing", "messages": message(PROMPT)})
    assert status == 404 and body["error"]["message"].startswith("'bench/nothing' is not a collection here.")


def test_unknown_nominee_said_in_the_text_heading_for_a_newcomer_and_response_format_noted(gateway):
    demo.set_collection("core", ["alpha"], description="one reviewer", reply="merged", merger="merger")
    status, body = ask(gateway, {"model": "bench/core", "messages": message(PROMPT), "with": ["nobody"],
                                 "response_format": {"type": "json_object"}})
    text = body["choices"][0]["message"]["content"]
    assert status == 200 and body["bench"]["reply"] == "merged"
    assert "Not asked: nobody (not registered on the bench)." in text
    assert body["bench"]["notes"][-1] == (
        "response_format is ignored by a panel: several models answer in markdown, so the reply is not JSON; "
        "for structured output ask one member with route mode (bench/core:route)")
    fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 1}\n')
    status, body = ask(gateway, {"model": "bench/core:all", "messages": message(PROMPT)})
    assert "notes" not in body["bench"] and body["bench"]["shape_by"] == "no decision model onboarded"
    assert body["choices"][0]["message"]["content"].split("\n")[0].endswith(
        "explorer shape general (the default: no decision model is onboarded to choose a shape for each prompt, "
        "so explorers take the general angle)")


def test_the_demo_footer_names_its_folder(gateway, monkeypatch):
    demo.set_collection("core", ["alpha"], description="one reviewer")
    _, plain = ask(gateway, {"model": "bench/core", "messages": message(PROMPT)})
    assert "`python -m benchwarmers.panel.offload verdict <call id>" in plain["choices"][0]["message"]["content"]
    monkeypatch.setenv("BENCHWARMERS_DEMO", "1")
    _, shown = ask(gateway, {"model": "bench/core", "messages": message(PROMPT)})
    assert f"`BENCHWARMERS_HOME={paths.data()} python -m benchwarmers.panel.offload verdict <call id>" in \
        shown["choices"][0]["message"]["content"]


def test_paths_says_why_the_folder_was_chosen(home, monkeypatch):
    def run():
        return subprocess.run([sys.executable, "-m", "benchwarmers.core.paths"], capture_output=True, text=True,
                              cwd=paths.CODE, check=True).stdout

    assert run() == f"{home}  (BENCHWARMERS_HOME names it)\n"
    monkeypatch.delenv("BENCHWARMERS_HOME")
    said = run()
    assert said.endswith(("names it (BENCHWARMERS_HOME is not set)\n",
                          "neither BENCHWARMERS_HOME nor .benchwarmers-home names another)\n"))


def test_langchain_chat_openai_invoke_and_stream(gateway, bench):
    """Issue 16 item 5: LangChain's ChatOpenAI against the gateway, as a LangChain app points it (no code of ours)."""
    import pytest

    chat_openai = pytest.importorskip("langchain_openai", reason="langchain-openai is not installed "
                                                                "(pip install -e '.[test]')").ChatOpenAI
    demo.set_collection("core", ["alpha", "beta"], description="two reviewers")
    model = chat_openai(base_url=gateway + "/v1", api_key="unused", model="bench/core", max_retries=0, timeout=30)
    said = model.invoke(PROMPT)
    assert bench.answer_for("alpha", PROMPT) in said.content and bench.answer_for("beta", PROMPT) in said.content
    assert said.usage_metadata["output_tokens"] > 0
    pieces = [chunk.content for chunk in model.stream(PROMPT)]
    assert len(pieces) > 1 and bench.answer_for("beta", PROMPT) in "".join(pieces)

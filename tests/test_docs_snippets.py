"""Every command the documentation means to be run works (issue 36 item 4): each fenced `sh` or `python` block
preceded by a `<!-- run -->` line, in README.md and docs/, runs against a demo bench started as `bench demo`
starts it (`tests/demobench.py`), so a renamed flag, command or route fails here instead of in a newcomer's first
hour. The blocks are run as printed but for the address: `127.0.0.1:8122` and `:8123` become the demo's port (the
dashboard's port answers every gateway route), and `BENCHWARMERS_URL` and `BENCHWARMERS_HOME` name the demo, as
the demo's own banner tells a reader to. A block without the marker says in its page why it is not run."""

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from demobench import running_demo

TOP = Path(__file__).resolve().parents[1]
RUN = re.compile(r"^<!-- run -->\n```(\w+)\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"^<!-- run -->$", re.M)
PORTS = re.compile(r"(127\.0\.0\.1|localhost):812[23]\b")
LANGUAGES = ("sh", "python")


def pages():
    return [TOP / "README.md", *sorted((TOP / "docs").rglob("*.md"))]


def blocks():
    """`(where, language, code)` of every block marked to run, `where` as `page:line`."""
    found = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for block in RUN.finditer(text):
            line = text.count("\n", 0, block.start()) + 2
            found.append((f"{page.relative_to(TOP)}:{line}", block.group(1), block.group(2)))
    return found


def run(block, demo):
    where, language, code = block
    code = PORTS.sub(f"127.0.0.1:{demo.port}", code)
    command = ["bash", "-euo", "pipefail", "-c", code] if language == "sh" else [sys.executable, "-c", code]
    # the interpreter's folder first, so `bench` and `python` are this install's, as after `pip install -e .`
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "BENCHWARMERS_URL": demo.url, "BENCHWARMERS_HOME": demo.home}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=TOP, timeout=120)
    return where, code, done


def test_the_marked_blocks_are_the_ones_meant():
    """The marker sits right before a fence of a language the test can run, and the pages that promise runnable
    examples have them, so a block is never skipped for a typo."""
    found = blocks()
    assert all(language in LANGUAGES for _, language, _ in found), [b[:2] for b in found]
    marked = {where.split(":")[0] for where, _, _ in found}
    for page in ("README.md", "docs/getting-started.md", "docs/commands.md", "docs/clients/openai.md",
                 "docs/clients/anthropic.md", "docs/clients/responses.md", "docs/clients/completions.md",
                 "docs/clients/ollama.md", "docs/clients/gemini.md", "docs/clients/agents.md"):
        assert page in marked, f"{page} has no block marked <!-- run -->"
    for page in pages():
        text = page.read_text(encoding="utf-8")
        assert len(MARKER.findall(text)) == len(RUN.findall(text)), f"{page}: a marker not before a fence"


@pytest.fixture(scope="module")
def demo():
    with running_demo() as running:
        yield running


def test_every_marked_block_runs_against_the_demo(demo):
    """Two at a time (the machine's two cores): each block must exit 0; a failure names the page and line."""
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda block: run(block, demo), blocks()))
    failed = [f"{where}: exit {done.returncode}\n{code}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n"
              f"{done.stderr[-2000:]}" for where, code, done in results if done.returncode != 0]
    assert not failed, "\n\n".join(failed)


@pytest.mark.parametrize("page", ["README.md", "docs/clients/openai.md"])
def test_the_sdk_example_shows_the_seats(page, demo):
    """The front page's promise, checked on its own output: the answer's text and one line per seat."""
    block = next(b for b in blocks() if b[0].startswith(page) and b[1] == "python")
    where, _, done = run(block, demo)
    assert done.returncode == 0, done.stderr
    seats = [line for line in done.stdout.splitlines() if re.match(r"p\d{8}-\d{6}-[0-9a-f]{16}\.\w+ \S+ ok$", line)]
    assert len(seats) == 5 and "## member" in done.stdout, done.stdout

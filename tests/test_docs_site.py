"""The documentation site builds strictly (issue 36 item 2): `mkdocs build --strict` as CI runs it, so a broken
link or anchor, or a page missing from the nav, fails the suite as it fails CI; the pages the hook
(docs/hooks/site.py) adds are there: the README as the home page, the top-level documents, the benchmarks'
charts and the CLI reference written from the parsers. And nothing a page needs comes from another machine: no
tag in the built pages loads from outside, and Chromium, reading the site from 127.0.0.1 and searching it, asks
nothing of any other host (the theme's fonts are off, the request's path is a committed SVG, not a diagram
library fetched from a CDN)."""

import functools
import os
import re
import subprocess
import sys
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from benchwarmers.cli import launcher
from conftest import watched_page
from localserver import LocalServer

TOP = Path(__file__).resolve().parents[1]
# a tag that has the browser fetch what it names: a script, a stylesheet or icon, an image, a frame, a media source
LOADING = re.compile(r"<(?:script|link|img|iframe|source|embed|object|video|audio)\b[^>]*>", re.I)
OUTSIDE = re.compile(r"""\b(?:src|href|data|srcset)\s*=\s*["']?\s*(?:https?:)?//""", re.I)
VISITED = ["", "concepts/", "dashboard/", "clients/openai/", "reference/cli/"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    built = tmp_path_factory.mktemp("docs") / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(built)],
                          capture_output=True, text=True, cwd=TOP, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    return built


class SiteServer(LocalServer):
    """The built site as `python -m http.server` serves it, quietly."""

    def __init__(self, folder):
        class Quiet(SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass
        self.url = self.listen(functools.partial(Quiet, directory=str(folder)))


def test_the_site_builds_strictly_with_every_page(site):
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'src="img/review-1440x900-light.png"' in home and 'href="getting-started/' in home
    for page in ("reference/gateway", "reference/dashboard", "reference/security", "reference/privacy",
                 "contributing/tests", "benchmarks", "dashboard", "concepts"):
        assert (site / page / "index.html").is_file(), page
    charts = sorted(p.name for p in (TOP / "benchmarks" / "results").glob("*.svg"))
    assert charts and charts == sorted(p.name for p in (site / "benchmarks" / "results").glob("*.svg"))
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in launcher.client_commands():
        assert f"bench {command}" in cli, command
    assert "bench model role" in cli and "--max-explorers" in cli  # actions and their options too
    concepts = (site / "concepts" / "index.html").read_text(encoding="utf-8")
    assert 'src="../img/request-path.svg"' in concepts and (site / "img" / "request-path.svg").is_file()


def test_no_page_loads_anything_from_another_machine(site):
    outside = [(str(page.relative_to(site)), tag) for page in sorted(site.rglob("*.html"))
               for tag in LOADING.findall(page.read_text(encoding="utf-8")) if OUTSIDE.search(tag)]
    assert outside == []
    assert not any("mermaid" in p.read_text(encoding="utf-8") for p in site.rglob("*.html"))


def test_the_site_in_chromium_asks_only_its_own_host(site, browser):
    """What the theme's scripts fetch as a page is read (its search index and worker among them), not only what
    its tags name: every request to another host is recorded and refused."""
    asked = []

    def local_only(route):
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            asked.append(route.request.url)
            route.abort()

    with SiteServer(site) as served:
        context, page = watched_page(browser)
        try:
            context.route("**/*", local_only)
            for path in VISITED:
                page.goto(f"{served.url}/{path}")
                page.wait_for_load_state("networkidle")
            page.locator("input.md-search__input").press_sequentially("collection")
            page.wait_for_selector(".md-search-result__item")
            assert asked == []
            assert page.problems == []
        finally:
            context.close()

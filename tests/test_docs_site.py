"""The documentation site builds strictly (issue 36 item 2): `mkdocs build --strict` as CI runs it, so a broken
link or anchor, or a page missing from the nav, fails the suite as it fails CI; and the pages the hook
(docs/hooks/site.py) adds are there: the README as the home page, the top-level documents, the benchmarks'
charts and the CLI reference written from the parsers."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchwarmers.cli import launcher

pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install -e '.[docs]')")
pytest.importorskip("material", reason="the docs extra is not installed (pip install -e '.[docs]')")
TOP = Path(__file__).resolve().parents[1]


def test_the_site_builds_strictly_with_every_page(tmp_path):
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          capture_output=True, text=True, cwd=TOP, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'src="img/collections-1440x900-light.png"' in home and 'href="getting-started/' in home
    for page in ("reference/gateway", "reference/dashboard", "reference/security", "reference/privacy",
                 "contributing/tests", "benchmarks", "dashboard", "concepts"):
        assert (site / page / "index.html").is_file(), page
    charts = sorted(p.name for p in (TOP / "benchmarks" / "results").glob("*.svg"))
    assert charts and charts == sorted(p.name for p in (site / "benchmarks" / "results").glob("*.svg"))
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in launcher.client_commands():
        assert f"bench {command}" in cli, command
    assert "bench model role" in cli and "--max-explorers" in cli  # actions and their options too

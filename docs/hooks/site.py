"""The documentation site's one MkDocs hook: the pages that live elsewhere in the checkout, and the CLI reference.

GATEWAY.md, DASHBOARD.md, SECURITY.md, PRIVACY.md, tests/README.md and benchmarks/README.md stay where they are
(their readers, tests among them, find them there); each is added to the site as a page under its own path, read
at build time, so the site and the file never differ. The benchmarks' SVG charts go beside their page, so the
README's relative image links work in both places. `reference/cli.md` is written from the real argparse parsers
(`cli_reference()`), so a renamed command or option changes the page, never leaving it behind. The site's home
page is the README, its links turned from the checkout's paths into the site's.
"""

import argparse
import functools
import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

TOP = Path(__file__).resolve().parents[2]
INCLUDED = {
    "reference/gateway.md": "GATEWAY.md",
    "reference/dashboard.md": "DASHBOARD.md",
    "reference/security.md": "SECURITY.md",
    "reference/privacy.md": "PRIVACY.md",
    "contributing/tests.md": "tests/README.md",
    "benchmarks/index.md": "benchmarks/README.md",
}
SITE_PATHS = {source: uri for uri, source in INCLUDED.items()}
LINK = re.compile(r"\]\(([^)#\s]+)")
CHARTS = "benchmarks/results"
WIDTH = 100  # help text is wrapped the same on every terminal, so the page does not depend on the builder's


def on_files(files, config):
    readme = (TOP / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=home_page(readme)))
    for uri, source in INCLUDED.items():
        text = (TOP / source).read_text(encoding="utf-8")
        files.append(File.generated(config, uri, content=included_page(uri, source, text)))
    for chart in sorted((TOP / CHARTS).glob("*.svg")):
        files.append(File.generated(config, f"{CHARTS}/{chart.name}", abs_src_path=str(chart)))
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    return files


def home_page(readme):
    """The README with each link to a checkout path pointed at that path's page on the site."""
    def site(found):
        target = found.group(1)
        return "](" + SITE_PATHS.get(target, target.removeprefix("docs/"))
    return LINK.sub(site, readme)


def included_page(uri, source, text):
    """A file from elsewhere in the checkout as the page `uri`: its links to `docs/` and to the other included
    files pointed at their pages, relative to where the page sits on the site; every other link as written."""
    def site(found):
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), found.group(1)))
        page = target.removeprefix("docs/") if target.startswith("docs/") else SITE_PATHS.get(target)
        if page is None:
            return found.group(0)
        return "](" + posixpath.relpath(page, posixpath.dirname(uri) or ".")
    return LINK.sub(site, text)


def fixed_width(parser):
    parser.formatter_class = functools.partial(parser.formatter_class, width=WIDTH)
    return parser


def subparsers(parser):
    """`{name: parser}` of a parser's commands or actions, in the order they were added."""
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def helped(title, parser, level):
    """One command's section: its `--help` exactly as the shell shows it, then its actions' sections."""
    parser.prog = title
    text = fixed_width(parser).format_help().rstrip()
    parts = [f"{'#' * level} `{title}`", "", "```text", text, "```", ""]
    for name, child in subparsers(parser).items():
        parts += helped(f"{title} {name}", child, level + 1)
    return parts


def cli_reference():
    """The `bench` command's reference: the launcher's usage screen, then every client command's help."""
    from benchwarmers.cli import cli, launcher

    parts = ["# The `bench` command", "",
             "Written from the parsers themselves when the site is built (`docs/hooks/site.py`): what `bench` and",
             "`bench <command> --help` print, word for word. The server commands (`serve`, `demo`, `gateway`, `mcp`,",
             "`init`) are the launcher's; the others are clients of a running server (see [Commands](../commands.md)).",
             "", "## `bench`", "", "```text", launcher.usage("bench", {}), "```", ""]
    for name, parser in subparsers(cli.parser("bench")).items():
        parts += helped(f"bench {name}", parser, 2)
    return "\n".join(parts) + "\n"

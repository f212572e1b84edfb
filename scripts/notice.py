"""Render NOTICE from what the program ships (suite-cli-mcp.md §3.10, NT-1).

    python -m benchwarmers.scripts.notice           # write CODE/NOTICE, print its line count
    python -m benchwarmers.scripts.notice --check   # "current" (exit 0), or "out of date: run ..." (exit 1)

NOTICE holds our copyright line; the third-party code shipped inside task files, grouped by (`upstream`,
`license`) with each task's `source_url`; the licence of every font the dashboard ships; and the browser code
vendored in `ui/vendor/` (issue 31: the Review page's markdown renderer and sanitizer), as the table in
`ui/vendor/README.md` records it. For this product the task section is empty (ST-1: the starter tasks are written
for this project) and no font ships; the sections appear by themselves once either ships.

Decisions where the spec is silent:
- Shipped tasks are `suite/starter/*/task.json` under CODE; a task with an `upstream` is third-party code, its
  `license` defaults to `unknown` (printed, so a missing licence is visible, never hidden).
- Fonts are `*.woff`, `*.woff2`, `*.ttf` and `*.otf` under `ui/`; a font's licence is the text of the
  `OFL.txt` or `LICENSE*` file beside it (`no licence file beside it` otherwise, again visible).
- `--check` with no NOTICE at all is out of date.
"""

import json
import sys
from pathlib import Path

from ..core import fileio, paths

COPYRIGHT = "Benchwarmers\nCopyright 2026 The Benchwarmers authors. Licensed under the Apache License, Version 2.0."
FONTS = (".woff", ".woff2", ".ttf", ".otf")
LICENCE_FILES = ("OFL.txt", "LICENSE*")


def third_party(root):
    """`{(upstream, license): [source_url, ...]}` from the shipped tasks that carry an `upstream`."""
    groups = {}
    for where in sorted((root / "suite" / "starter").glob("*/task.json")):
        try:
            task = json.loads(where.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(task, dict) and task.get("upstream"):
            group = (str(task["upstream"]), str(task.get("license") or "unknown"))
            url = str(task.get("source_url") or where.parent.name)
            groups.setdefault(group, []).append(url)
    return groups


def font_licences(root):
    """`{font folder (relative): (font names, licence text)}` for the fonts under `ui/`."""
    found = {}
    for font in sorted(p for p in (root / "ui").rglob("*") if p.suffix.lower() in FONTS):
        folder = font.parent
        if folder not in found:
            texts = [p for pattern in LICENCE_FILES for p in sorted(folder.glob(pattern))]
            licence = texts[0].read_text(encoding="utf-8").strip() if texts else "no licence file beside it"
            found[folder] = ([], licence)
        found[folder][0].append(font.name)
    return {str(folder.relative_to(root).as_posix()): value for folder, value in found.items()}


def vendored(root):
    """`[(package, version, licence, file)]` from the table rows of `ui/vendor/README.md` (none without it)."""
    try:
        text = (root / "ui" / "vendor" / "README.md").read_text(encoding="utf-8")
    except OSError:
        return []
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) >= 4:
            package = cells[1].partition("](")  # `[name](url)`: the name and its address
            name = package[0].lstrip("[") + (f" ({package[2].rstrip(')')})" if package[1] else "")
            rows.append((name, cells[2], cells[3].replace("`", ""), cells[0].strip("`")))
    return rows


def render(root):
    """The NOTICE text for the program at `root`, with `\\n` newlines."""
    parts = [COPYRIGHT]
    groups, fonts = third_party(root), font_licences(root)
    if groups:
        parts.append("This product ships code from other projects inside its review tasks:")
        for (upstream, licence), urls in sorted(groups.items()):
            parts.append("\n".join([f"{upstream} ({licence})"] + [f"  {url}" for url in sorted(set(urls))]))
    if fonts:
        for folder, (names, licence) in sorted(fonts.items()):
            parts.append(f"Fonts in {folder}: {', '.join(names)}\n\n{licence}")
    browser = vendored(root)
    if browser:
        parts.append("\n".join(["Browser code in ui/vendor, copied unchanged from npm, each licence's text beside it:"]
                               + [f"  {name} {version}, {licence}: {file}" for name, version, licence, file in browser]))
    if not groups and not fonts and not browser:
        parts.append("It ships no third-party code and no fonts: every review task was written for this project.")
    elif not groups and not fonts:
        parts.append("It ships no fonts, and every review task was written for this project.")
    return "\n\n".join(parts) + "\n"


def main(argv=None, root=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--check"]):
        print("usage: python -m benchwarmers.scripts.notice [--check]", file=sys.stderr)
        return 2
    if root is None and not paths.IN_CHECKOUT:  # an install carries NOTICE in its metadata, not beside its code
        print("NOTICE is a checkout's file: run this in a checkout, not from an installed package", file=sys.stderr)
        return 1
    root = Path(root or paths.CODE)
    text, where = render(root), root / "NOTICE"
    if argv == ["--check"]:
        try:
            now = where.read_bytes().decode("utf-8").replace("\r\n", "\n")
        except OSError:
            now = None
        if now != text:
            print("out of date: run python -m benchwarmers.scripts.notice")
            return 1
        print("current")
        return 0
    fileio.write_atomic(where, text)
    print(f"wrote {where} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The wheel is the whole product (issue 28 item 7): the rule it rests on, checked on the source.

The wheel itself, built and installed alone, is driven end to end by `.ci/wheel_smoke.py` (`.ci/run` runs it).
What is checked here is what lets it work: no module of the package, and neither door at the checkout's top,
edits the import path (`sys.path`, `site.addsitedir`) or sets `PYTHONPATH` for a child. The package finds its
own modules by relative imports, children run as `python -m benchwarmers.<module>` (paths.module_command), and
both find the package where it is installed, a checkout's editable install or a wheel's.
"""

import ast
import fnmatch
import tomllib
from pathlib import Path

from benchwarmers.dashboard import serve

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_FOLDERS = ("metrics", "suite", "scripts", "perf")  # pyproject's package-dir: what the wheel carries
DOORS = ("gateway.py", "serve.py")
PATH_EDITS = {("sys", "path"), ("site", "addsitedir")}


def sources():
    found = [ROOT / door for door in DOORS]
    for folder in PACKAGE_FOLDERS:
        found += sorted((ROOT / folder).rglob("*.py"))
    return found


def path_edits(tree):
    """Each `sys.path` / `site.addsitedir` reference, `from sys import path`, and "PYTHONPATH" as a string."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and (node.value.id, node.attr) in PATH_EDITS:
            yield node.lineno, f"{node.value.id}.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and any((node.module, a.name) in PATH_EDITS for a in node.names):
            yield node.lineno, f"from {node.module} import ..."
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("PYTHONPATH"):
            yield node.lineno, repr(node.value)


def test_the_package_never_edits_the_import_path():
    files = sources()
    assert len(files) > 100 and all(f.exists() for f in files)
    found = [f"{path.relative_to(ROOT)}:{line}: {what}"
             for path in files for line, what in path_edits(ast.parse(path.read_text(encoding="utf-8")))]
    assert found == []


def test_the_check_finds_each_kind_of_edit():
    source = ("import sys, site\nsys.path.insert(0, 'x')\nsite.addsitedir('y')\nfrom sys import path\n"
              "env = {'PYTHONPATH': '.'}\n")
    assert sorted(path_edits(ast.parse(source))) == \
        [(2, "sys.path"), (3, "site.addsitedir"), (4, "from sys import ..."), (5, "'PYTHONPATH'")]
    assert list(path_edits(ast.parse('"""Nothing here edits sys.path or PYTHONPATH."""\nimport sys\n'))) == []


def test_the_vendored_browser_files_ship_and_are_recorded():
    """Issue 31: the Review page's marked and DOMPurify ship inside the wheel (pyproject's package data for
    `benchwarmers.ui`), each served by name, each named in ui/vendor/README.md with its version and licence beside it."""
    vendor = ROOT / "ui" / "vendor"
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    readme = (vendor / "README.md").read_text(encoding="utf-8")
    files = sorted(p.relative_to(ROOT / "ui").as_posix() for p in vendor.iterdir())
    assert all(any(fnmatch.fnmatch(name, glob) for glob in globs["benchwarmers.ui"]) for name in files)
    assert sorted(serve.VENDOR) == [name for name in files if name.endswith(".js")] and len(serve.VENDOR) == 2
    for name, version in (("marked.umd.js", "18.3.0"), ("purify.min.js", "3.5.0")):
        head = (vendor / name).read_text(encoding="utf-8")[:400]
        assert version in head and f"| `{name}` |" in readme and f"| {version} |" in readme
    assert {"LICENSE-marked.md", "LICENSE-dompurify", "LICENSE-dompurify-MPL"} <= {p.name for p in vendor.iterdir()}

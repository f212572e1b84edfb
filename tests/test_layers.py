"""The package's floors (style.md, "Layers"): each subpackage of `benchwarmers` imports only from itself and
the packages beneath it, and no import cycle exists anywhere, not even inside a package.

One rule per package, bottom to top, in `PACKAGES`; the package's folder is the rule. Every `import x` and
`from x import y` counts, at module level or inside a function: a late import is still a dependency, only
hidden. The modules are read with `ast`, never imported, and named as the wheel names them (`metrics/` is
`benchwarmers`, `suite/` is `benchwarmers.suite`, ...).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# checkout folder -> its name in the wheel (pyproject.toml's package-dir)
SCANNED = {"metrics": "benchwarmers", "suite": "benchwarmers.suite", "scripts": "benchwarmers.scripts",
           "perf": "benchwarmers.perf"}
MOST_MODULES = 15

# Bottom to top. A package may import from itself and the packages listed before it.
PACKAGES = [
    ("core", "the data folder, safe writes, secrets, images, the errors a request is refused with"),
    ("store", "where the logs replicas share are kept: the data folder's JSONL files, or one Postgres server"),
    ("wire", "what each client API's requests and replies look like, and the routes they come by; calls nothing"),
    ("net", "HTTP to an upstream or to a running bench (pool, body readers, deadlines), knowing no model"),
    ("models", "what models there are, where they are served, what is known and learned of them"),
    ("providers", "sign-in providers, token renewal, hub admin APIs"),
    ("calling", "one call to one model: the built-in client, the llm backend, the ledger, pacing, cost"),
    ("panel", "collections, roles, the offload log, the router, the panel itself, route mode, the leaderboard"),
    ("demo", "the local upstream and the demo bench, for tests, benchmarks and `bench demo`"),
    ("server", "the HTTP server, the guard, gateway keys, the gateway and the MCP server"),
    ("admin", "what changes the bench: the dashboard's writes, onboarding, the scheduler, retiring"),
    ("dashboard", "what the dashboard shows, and its server (the gateway's routes plus its own)"),
    ("cli", "the `bench` launcher, the CLI client, shell completion"),
    ("suite", "the review-task suite"),
    ("scripts", "the maintenance scripts"),
    ("perf", "the performance probe"),
]


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([SCANNED[parts[0]], *parts[1:]])


def project_files():
    found = {}
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "starter" in path.relative_to(ROOT).parts:  # suite/starter holds task fixtures: data, not modules
                continue
            found[module_name(path)] = path
    return found


def package_of(module):
    """`benchwarmers.panel.offload` -> `panel`; the root package itself is the floor beneath everything."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def imported(path, name, known):
    """`{module: line}` for every project module `path` imports, however deep in the file the import sits."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # `from metrics import client` imports the module benchwarmers.calling.client; `from x import f`, the module x
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.setdefault(target, node.lineno)
    return found


def graph():
    known = project_files()
    return {name: imported(path, name, known) for name, path in known.items()}


def cycle(edges):
    """One import cycle as a list of modules (first repeated last), or None."""
    state = {}

    def visit(module, trail):
        state[module] = "open"
        trail.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == "open":
                return trail[trail.index(target):] + [target]
            if target not in state:
                found = visit(target, trail)
                if found:
                    return found
        state[module] = "done"
        trail.pop()
        return None

    for module in sorted(edges):
        if module not in state:
            found = visit(module, [])
            if found:
                return found
    return None


def test_every_package_has_a_floor():
    names = [name for name, _ in PACKAGES]
    on_disk = {package_of(module) for module in project_files()} - {""}
    assert len(names) == len(set(names)), "a package is named twice in PACKAGES"
    assert sorted(on_disk - set(names)) == [], "add each new package to PACKAGES (tests/test_layers.py), at its floor"
    assert sorted(set(names) - on_disk) == [], "PACKAGES names packages that do not exist"


def test_no_package_imports_a_higher_one():
    rank = {name: floor for floor, (name, _) in enumerate(PACKAGES)}
    rank[""] = -1
    upward = [f"{module} imports {target} on line {line}: {package_of(target)} is above {package_of(module)}"
              for module, targets in graph().items() for target, line in targets.items()
              if rank[package_of(target)] > rank[package_of(module)]]
    assert upward == []


def test_no_import_cycle():
    found = cycle(graph())
    assert found is None, "import cycle: " + " -> ".join(found)


def test_folders_stay_small():
    """A folder of dozens of modules hides the request's way through the product: at most 15 a package."""
    sizes = {}
    for module in project_files():
        if module.count(".") == 2:
            sizes[package_of(module)] = sizes.get(package_of(module), 0) + 1
    assert {name: n for name, n in sizes.items() if n > MOST_MODULES} == {}


def test_imports_inside_the_package_are_relative():
    """The same files run as `metrics.*` from a bare checkout and as `benchwarmers.*` from a wheel: an absolute
    import of either name inside the package would tie it to one of them."""
    absolute = []
    for module, path in project_files().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level and node.module else []
            absolute += [f"{module}: {name}" for name in names
                         if name.split(".")[0] in ("metrics", "benchwarmers", "suite", "scripts", "perf")]
    assert absolute == []


def test_the_walker_sees_late_and_relative_imports(tmp_path):
    """The rule is only as good as the walk: an import inside a function, and a relative one, both count."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from pkg import high\n    return high\n")
    (package / "high.py").write_text("from . import low\nfrom .low import f\n")
    known = {"pkg": None, "pkg.low": None, "pkg.high": None}
    assert imported(package / "low.py", "pkg.low", known) == {"pkg.high": 2}
    assert imported(package / "high.py", "pkg.high", known) == {"pkg.low": 1}
    edges = {"pkg.low": {"pkg.high": 2}, "pkg.high": {"pkg.low": 1}}
    assert cycle(edges) in (["pkg.high", "pkg.low", "pkg.high"], ["pkg.low", "pkg.high", "pkg.low"])
    assert cycle({"a": {"b": 1}, "b": {}}) is None

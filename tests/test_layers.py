"""The package's layers (style.md, "Layers"): a module imports only from its own layer or lower ones, and no
import cycle exists anywhere, not even inside a layer.

Every `import x` and `from x import y` counts, at module level or inside a function: a late import is
still a dependency, only hidden. The modules are read with `ast`, never imported.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("metrics", "suite", "scripts", "perf", "gateway.py", "serve.py")

# Bottom to top. A module may import from its own layer and the layers listed before it.
LAYERS = [
    ("files: the data folder, safe writes, keys, text made fit to write down, the errors a request is refused with",
     ["metrics", "suite", "metrics.paths", "metrics.fileio", "metrics.images", "metrics.keys", "metrics.errors"]),
    ("formats: what requests and replies look like, the routes they come by; they shape and read, they call nothing",
     ["metrics.routes", "metrics.notices", "metrics.scoring", "metrics.formats",
      "metrics.formats.chat", "metrics.formats.common", "metrics.formats.anthropic", "metrics.formats.completions",
      "metrics.formats.gemini", "metrics.formats.ollama", "metrics.formats.responses", "metrics.formats.turn"]),
    ("transport: HTTP to an upstream (pool, body readers, deadlines), knowing no model",
     ["metrics.transport", "metrics.gather"]),
    ("registry: what models there are, where they are served, what is known of them",
     ["metrics.endpoints", "metrics.registry", "metrics.connections", "metrics.aliases", "metrics.history", "metrics.catalog",
      "metrics.learn", "metrics.alerts", "metrics.sources", "metrics.catalogrefresh", "metrics.quota",
      "metrics.freetier"]),
    ("hubs and sign-ins: hub admin APIs, sign-in providers and their token endpoints (renewal before a call)",
     ["metrics.providers", "metrics.renewal", "metrics.hubs", "metrics.owui", "metrics.litellm_hub",
      "metrics.cliproxy"]),
    ("calling: one call to one model, and its ledger line",
     ["metrics.ledger", "metrics.pacing", "metrics.client", "metrics.llm_backend", "metrics.cost"]),
    ("panel: collections, roles, the offload log, the router, the panel itself and route mode",
     ["metrics.policy", "metrics.collections", "metrics.roles", "metrics.offload", "metrics.shape", "metrics.route",
      "metrics.panel", "metrics.conversations", "metrics.route_mode", "metrics.leaderboard", "metrics.wrong"]),
    ("access: who may call the servers",
     ["metrics.gatekeys", "metrics.guard", "metrics.httpserver"]),
    ("dashboard: what the dashboard reads and writes, one job a module",
     ["metrics.tails", "metrics.changes", "metrics.themes", "metrics.jobs", "metrics.scheduler", "metrics.benchview",
      "metrics.gatewaycard", "metrics.collectionedit", "metrics.modeledit", "metrics.modelfacts", "metrics.settingsedit",
      "metrics.endpointedit", "metrics.onboardrun", "metrics.onboarding", "metrics.discover", "metrics.connect",
      "metrics.hubroutes", "metrics.hubadd", "metrics.quotaview", "metrics.benchmarks"]),
    ("top: the servers, the commands, the demo upstream",
     ["gateway", "serve", "metrics.launcher", "metrics.demo", "scripts.sync_config",
      "scripts.init", "scripts.onboard", "scripts.check", "scripts.list_served", "metrics.retire", "scripts.auto_retire",
      "metrics.probe_caps",
      "scripts.check_deprecations", "scripts.notice", "scripts.reprefix",
      "scripts.provider_tags", "scripts.collection", "perf.run",
      "suite.tasks", "suite.run", "suite.seed", "suite.mine", "suite.pace", "suite.rebench", "suite.longcontext",
      "metrics.remote", "metrics.mcp_tools", "metrics.mcp_server", "metrics.cli", "metrics.completion",
      "metrics.replay", "scripts.refresh_catalog", "metrics.demofeeds"]),
]


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_files():
    found = {}
    for name in SCANNED:
        where = ROOT / name
        for path in sorted(where.rglob("*.py")) if where.is_dir() else [where]:
            if "starter" in path.relative_to(ROOT).parts:  # suite/starter holds task fixtures: data, not modules
                continue
            found[module_name(path)] = path
    return found


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
            # `from metrics import client` imports the module metrics.client; `from x import f`, the module x
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


def layer_of():
    return {module: rank for rank, (_, modules) in enumerate(LAYERS) for module in modules}


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


def test_every_module_has_a_layer():
    named = [module for _, modules in LAYERS for module in modules]
    known = project_files()
    assert len(named) == len(set(named)), "a module is named in two layers"
    assert sorted(set(known) - set(named)) == [], "add each new module to one layer in LAYERS (tests/test_layers.py)"
    assert sorted(set(named) - set(known)) == [], "LAYERS names modules that do not exist"


def test_no_module_imports_a_higher_layer():
    rank = layer_of()
    upward = [f"{module} ({LAYERS[rank[module]][0].split(':')[0]}) imports {target} "
              f"({LAYERS[rank[target]][0].split(':')[0]}) on line {line}"
              for module, targets in graph().items() for target, line in targets.items()
              if rank.get(target, -1) > rank.get(module, len(LAYERS))]
    assert upward == []


def test_no_import_cycle():
    found = cycle(graph())
    assert found is None, "import cycle: " + " -> ".join(found)


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

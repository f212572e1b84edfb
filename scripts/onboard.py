"""Served → usable, with evidence (suite-cli-mcp.md §3.2, OB-1..12).

    python -m benchwarmers.scripts.onboard SERVED_NAME [--endpoint NAME] [--skip-suite] [--ad-hoc]

Five steps, each printed as `  [n/5] ...` (the dashboard's onboarding queue tails them): the
endpoint serves the name; it is registered under an alias; the registrations are synced to llm
and the catalog refreshed; a four-call availability probe (`perf/run.py`); the review suite.
It never decides whether work goes to the model: the router does, from the evidence gathered.

Decisions where the contract is silent:
- A listing entry without `supported_endpoints` is taken for a chat model; if it only answers the
  Decisions API, the availability probe says so (its calls fail) and the issue is recorded.
- Step 3 refreshes no provider tags: `scripts/provider_tags.py` writes them from an Open WebUI hub, run on its
  own (a model's connection reads `config/provider-tags.json` as it stands); the catalog is refreshed in this
  process (it is the same listing fetch the catalog job makes).
- `--selftest` is not offered: the checks are tests (tests/test_first_hour.py runs this script end to end), as
  for the modules (docs/decisions.md).
"""

import argparse
import csv
import datetime
import os
import re
import subprocess
import sys

from ..core import fileio, keys, paths, records, settings
from ..models import catalog, connections, endpoints, registry
from ..providers import renewal
from ..panel import roles, roster, shape

CODE = paths.CODE
PROBE_CAP = 20 * 60
SUITE_CAP = 3600
IMAGE_NAME = re.compile(r"(^|[/._-])(gpt-image|dall-e|imagen|flux|stable-diffusion|sdxl|sd3)", re.I)
ANSWERED = re.compile(r"\b(\d+)a/\d+r/")
DETAIL = 240
ISSUE_DETAIL = 1000


def child_env():
    return {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1"}


def prefix_of(served, row):
    """OB-3: the hub connection prefix, from the listing's own upstream id only (never guessed from a dot)."""
    outer = row.get("openai") if isinstance(row.get("openai"), dict) else {}
    inner = outer.get("openai") if isinstance(outer.get("openai"), dict) else {}
    upstream = inner.get("id")
    if isinstance(upstream, str) and upstream and served.endswith(upstream) and served != upstream:
        return served[: -len(upstream)]
    return ""


def taken():
    """Every alias already in use, with the served name it stands for: registrations, decision models and
    retired aliases (a retired alias is never reused, OB-2)."""
    found = {}
    for alias, record in roster.retired().models.items():
        found[alias] = record.served or records.string(record.stored.get("model_name"))
    for alias, entry in registry.decision_models().items():
        found[alias] = entry.served
    found.update(registry.names())
    return found


def alias_for(served, prefix="", ep=None):
    """OB-2: the last `/` segment without the connection prefix, `:` → `-`; made unique when taken.

    The same served name registered from another endpoint gets this endpoint's name as its suffix
    (`alpha-groq`): endpoint names are unique, so the alias is too, and it says where it is served."""
    alias = served[len(prefix):].rsplit("/", 1)[-1].replace(":", "-")
    used = taken()
    if alias not in used or used[alias] == served and registry.endpoint_of(alias) in (None, ep):
        return alias
    if used[alias] == served:
        return f"{alias}-{ep}"
    tag = fileio.read_json(paths.file("config", "provider-tags.json")).get(served)
    suffix = tag.split("/", 1)[0] if isinstance(tag, str) and tag else "alt"
    return f"{alias}-{suffix}"


def not_served(served, alias, listed):
    """OB-4's refusal: the name, up to five similar served ids, and what to do."""
    stem = alias.split("-", 1)[0].lower()
    similar = [name for name in sorted(listed) if stem and stem in name.lower()][:5]
    hint = ("similar: " + ", ".join(similar)) if similar else "nothing similar is served"
    return (f"{served} is not served.\n  {hint}\n  add it to the endpoint first (or check the spelling: "
            "`python -m benchwarmers.models.endpoints` counts what each endpoint serves)")


def is_decision_model(row):
    supported = row.get("supported_endpoints")
    return isinstance(supported, list) and "decisions" in supported and "chat.completions" not in supported


def is_image_model(alias, served):
    info = catalog.info(alias) or {}
    outputs = info.get("output_modalities")
    if isinstance(outputs, list):
        return "image" in outputs
    return bool(IMAGE_NAME.search(served))


def set_role(alias, role, only_over=None):
    """Give `alias` a role in model-roles.json; with `only_over`, only when it has none or one of those."""
    def change(data):
        models = data.setdefault("models", {})
        if only_over is None or models.get(alias) in (None, *only_over):
            models[alias] = role
    fileio.update(roles.path(), change)


def hold_ad_hoc(alias):
    def change(data):
        data["ad_hoc"] = sorted(set(data.get("ad_hoc") or []) | {alias})
    fileio.update(roles.path(), change)


def note_path():
    return paths.file("runs", f"onboard-{datetime.date.today().isoformat()}.md")


def write_note(alias, served, lines):
    """OB-12's note, appended to today's onboarding file."""
    text = f"\n## Onboarded `{alias}` ({served}) — {datetime.date.today().isoformat()}\n\n" + "\n".join(
        f"- {line}" for line in lines) + "\n"
    with open(note_path(), "a", encoding="utf-8", opener=fileio.opener) as f:
        f.write(text)
    print(f"wrote {note_path()}")


def onboard_decision(alias, served, ep):
    """OB-5: a decision model is probed through the Decisions API and recorded, never registered for chat."""
    entry = {"served": served, "endpoint": ep, "via": ep, "path": "decisions", "question_types": ["choice"]}
    try:
        shape.ask(alias, entry, "Review this function for bugs: def f(x): return x + 1")
    except Exception as exc:
        code = getattr(exc, "code", None)
        hint = {404: f"{ep} has no /decisions under its base", 402: "the provider wants paid usage for it"}.get(
            code, "if it is a hub, check that it passes the Decisions API through; or the provider refused: try later")
        sys.exit(f"STOPPING: a decision model, but {ep}'s Decisions API did not answer: "
                 f"{type(exc).__name__}: {keys.clean(str(exc), 300)}\n  hint: {hint}")
    entry["onboarded"] = datetime.date.today().isoformat()
    fileio.update(registry.decisions_path(), lambda data: data.__setitem__(alias, entry))
    set_role(alias, "decision")
    print("  [2/5] recorded as a decision model (config/decision-models.json), never registered for chat")
    print("  [3/5] role decision in config/model-roles.json")
    print("  [4/5] the Decisions API answered")
    print("  [5/5] no chat probe and no suite for a decision model")
    write_note(alias, served, [f"endpoint {ep}", "decision model: the Decisions API answered"])
    return 0


def register(alias, served, ep):
    """OB-6: the registration, unless this very served name is already registered on this endpoint."""
    for known, reg in registry.registrations().items():
        if reg.model_name == served and registry.endpoint_of(known) == ep:
            print("  [2/5] already registered — leaving the yaml alone")
            return known
    held = registry.registration(alias)
    if held:
        sys.exit(f"STOPPING: cannot register {served} from {ep} as {alias}: that alias is already registered for "
                 f"{held.model_name or alias} from {registry.endpoint_of(alias) or 'an unknown endpoint'}. "
                 "Retire or rename that alias first.")
    registry.add_registration(alias, served, ep)
    print(f"  [2/5] registered as {alias}")
    return alias


def sync(alias, ep):
    """OB-7: registrations to llm's folder, then the catalog from the endpoint's listing."""
    registry.sync_to_llm()
    try:
        catalog.warm([ep], refresh=True)
        told = "details from the catalog"
    except Exception as exc:
        told = f"catalog refresh failed ({type(exc).__name__}); details at its next run"
    print(f"  [3/5] synced; connection is {connections.connection_of(alias)}; {told}")


def history_rows():
    try:
        with open(paths.file("perf", "history.csv"), encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return []


def probe(alias):
    """OB-9: four calls through `perf/run.py`; answered iff the alias's own row counts an answer."""
    print("  [4/5] probing availability (4 calls)...", flush=True)
    before = len(history_rows())
    command = paths.module_command("perf.run", "--model", alias, "-n", "2", "--timeout", "90", python=paths.child_python())
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_CAP, env=child_env(), cwd=CODE)
        out = run.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
    answered = False
    for line in out.splitlines():
        words = line.split()
        if words and words[0] == alias and ("tiny" in line or "large" in line):
            print(f"    {line.strip()}")
            found = ANSWERED.search(line)
            answered = answered or bool(found and int(found.group(1)) > 0)
    return answered, history_rows()[before:]


def record_issue(alias, served, ep, failed):
    """OB-10: what the probe met, kept under the alias in metrics/onboard-issues.json."""
    worst = failed[0] if failed else {}
    issue = {"at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"), "served": served,
             "endpoint": ep, "step": "availability probe", "failure": worst.get("failure") or "other",
             "detail": (worst.get("detail") or "the probe wrote no result")[:ISSUE_DETAIL],
             "log": settings.env("BENCH_ONBOARD_LOG")}
    fileio.update(paths.file("metrics", "onboard-issues.json"), lambda data: data.__setitem__(alias, issue))


def clear_issue(alias):
    fileio.update(paths.file("metrics", "onboard-issues.json"), lambda data: data.pop(alias, None))


def suite(alias, skip):
    """OB-11: the review suite, or why it did not run."""
    if skip:
        print("  [5/5] suite skipped by request")
        return "suite skipped by request"
    print("  [5/5] running the internal suite...", flush=True)
    command = paths.module_command("suite.run", "--model", alias, "--timeout", "300", python=paths.child_python())
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=SUITE_CAP, env=child_env(), cwd=CODE)
        out, told = run.stdout, "suite ran"
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        told = "suite stopped at its hour; the scheduled passes fill in the rest (answers so far are saved)"
        print(f"    {told}")
    for line in out.splitlines():
        if alias in line or line.startswith("## "):
            print(f"    {line[:110]}")
    return told


def where_it_lands():
    """OB-12: the first eight lines of the router's report."""
    run = subprocess.run(paths.module_command("panel.route", python=paths.child_python()), capture_output=True, text=True, env=child_env(),
                         cwd=CODE, timeout=300)
    print("Where it lands:")
    for line in (run.stdout or run.stderr).splitlines()[:8]:
        print(f"  {line}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.scripts.onboard",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("served", metavar="SERVED_NAME", help="the model's name as the endpoint serves it")
    parser.add_argument("--endpoint", help="the endpoint serving it (default: the default endpoint)")
    parser.add_argument("--skip-suite", action="store_true", help="probe availability only")
    parser.add_argument("--ad-hoc", action="store_true", help="never chosen automatically, only when named")
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    try:
        ep = args.endpoint or endpoints.default()
    except RuntimeError as exc:
        sys.exit(str(exc))
    if ep not in endpoints.readable():
        sys.exit(f"no endpoint '{ep}'; known: {', '.join(endpoints.readable()) or 'none'}")
    try:
        listed = renewal.models(ep)
    except Exception as exc:
        sys.exit(f"cannot reach the {ep} endpoint: {exc}")
    row = listed.get(args.served) or {}
    alias = alias_for(args.served, prefix_of(args.served, row), ep)
    print(f"onboarding {args.served} from {ep}  ->  alias {alias}", flush=True)
    twin = alias.removesuffix(f"-{ep}")
    if twin != alias and registry.names().get(twin) == args.served:
        print(f"  ({args.served} is already registered as {twin} from {registry.endpoint_of(twin)}; "
              f"this one is told apart by its endpoint)", flush=True)
    if args.served not in listed:
        sys.exit(not_served(args.served, alias, listed))
    print("  [1/5] served by the endpoint", flush=True)
    if is_decision_model(row):
        return onboard_decision(alias, args.served, ep)
    alias = register(alias, args.served, ep)
    if args.ad_hoc:
        hold_ad_hoc(alias)
    sync(alias, ep)
    if is_image_model(alias, args.served):
        set_role(alias, "image", only_over=("image",))
        print("  [4/5] an image generator: no chat probe")
        print("  [5/5] an image generator: no suite")
        write_note(alias, args.served, [f"endpoint {ep}", "image generator: role image, no probe, no suite"])
        return 0
    answered, rows = probe(alias)
    if not answered:
        failed = [r for r in rows if r.get("model") == alias and r.get("answered") in ("0", "")]
        for r in failed:
            print(f"    {r.get('prompt')}: {r.get('failure') or 'other'} — {(r.get('detail') or '')[:DETAIL]}")
        record_issue(alias, args.served, ep, failed)
        print(f"STOPPING: {alias} did not answer the availability probe. It stays registered, so the availability "
              "checks keep watching it; the issue is kept in metrics/onboard-issues.json. Fix the cause above, "
              f"then run `python -m benchwarmers.scripts.onboard {args.served}` again.")
        return 0
    clear_issue(alias)
    told = suite(alias, args.skip_suite)
    where_it_lands()
    write_note(alias, args.served, [f"endpoint {ep}, connection {connections.connection_of(alias)}",
                                    "availability probe: answered", told])
    print(f"Next: put it in a collection: python -m benchwarmers.scripts.collection add NAME {alias}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

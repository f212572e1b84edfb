"""The capability probe: which models really call tools and really reason (models.md §19, PROBE-1..3).

    python -m benchwarmers.admin.probe_caps [--model ALIAS] [--gap 30] [--dry-run]

The scheduler's weekly `capabilities` job (Sunday 07:00) runs it with `--gap 30`. Catalogs say what a
model should do; this asks. Per model, two calls straight to `<endpoint base>/chat/completions`
(not streamed, 180 s each, `--gap` seconds apart and between models):
- tools: one `get_time(city)` function, `tool_choice: "auto"`, a question that needs it; counts only a
  returned tool call (or finish `tool_calls`);
- reasoning: "What is 9*7? Reply with the number."; counts `reasoning_content` / `reasoning`, or
  `<think>` in the content.

What it sees is kept as positives only (LRN-9): a model seen calling a tool gets `tools: true` in
`config/model-learned.json`, which the catalog reads (CAT-1) and the gateway routes tools on; a model
that did not call one is `not seen`, never "cannot". An HTTP error goes to `learn.record` (a 429 cools
the model, a stated context window is kept) and reads `HTTP <code> (unknown)`. A reply naming another
model is noted as `served as <name>` (LRN-9).

Without `--model`, ad hoc models (`config/model-roles.json` `ad_hoc`) and models cooling down after a
rate limit (LRN-7) are skipped; `--model` probes the named ones regardless. `--dry-run` says what
would be asked and calls nothing, writes nothing.

Improvements over the reference (models.md, "Improvements worth making"):
- 4: the calls go through the transport, which never follows a redirect, so a key reaches only its host.
- 5: headers are EP-7's for the endpoint's API, and endpoints that speak another API than chat
  completions (Anthropic, Gemini, Responses) are skipped with a line saying so.
- 6: a swap is judged with `catalog.norm_model`, the one normaliser the client uses too.

Decisions where the contract is silent:
- Headers: the endpoint entry's `headers`, then the registration's (it carries a copy, REG-1), then the key.
  A registration that names a key that is not set is not asked (a keyless call would read as a 401).
- A rate-limited first call skips the second: the model is now cooling down, and a second call would be
  refused the same way. It reads `skipped (cooling down)`.
- A network failure or an unreadable reply is `unknown (<why>)` and is not recorded: it says nothing of the
  model.
- The calls are neither paced nor written to the usage ledger (BK-6 counts the client's calls; these are
  two short questions a week).
"""

import argparse
import json
import sys
import time

from ..core import keys
from ..net import transport
from ..models import catalog, endpoints, learn, registry
from ..panel import roles

TIMEOUT = 180
GAP = 30
TOOLS_MAX_TOKENS = 1024
REASONING_MAX_TOKENS = 2048
WHERE = "capability probe"
BODY_CHARS = 1000  # of an error body handed to learn.record

GET_TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The current local time in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "the city"}},
                   "required": ["city"]}}}
TOOLS_PROMPT = "What time is it in Paris right now? Use the get_time tool to find out."
REASONING_PROMPT = "What is 9*7? Reply with the number."


def questions():
    """The two request bodies after `model` (PROBE-2): `[(capability, fields)]`."""
    return [("tools", {"messages": [{"role": "user", "content": TOOLS_PROMPT}], "tools": [GET_TIME],
                       "tool_choice": "auto", "max_tokens": TOOLS_MAX_TOKENS}),
            ("reasoning", {"messages": [{"role": "user", "content": REASONING_PROMPT}],
                           "max_tokens": REASONING_MAX_TOKENS})]


class Target:
    """One alias to probe: where its questions go and with which headers."""

    def __init__(self, alias, served, endpoint, entry, registration):
        self.alias, self.served, self.endpoint = alias, served, endpoint
        self.api = entry.api
        self.url = entry.base.rstrip("/") + "/chat/completions"
        self.key_name = registration.api_key_name
        self.headers = {"Content-Type": "application/json", **entry.headers, **registration.headers}

    def problem(self):
        """Why this alias is not asked at all, or ""."""
        if self.api != "chat":
            return f"skipped: {self.endpoint} speaks the {self.api} API; the probe asks chat completions only"
        if self.key_name and not keys.key(self.key_name):
            return f"skipped: no key named '{self.key_name}' is set (llm keys set {self.key_name})"
        return ""

    def auth(self):
        secret = keys.key(self.key_name) if self.key_name else ""
        return endpoints.auth_headers(self.api, secret) if secret else {}


def targets():
    """PROBE-1's roster before the skips: every registration on a known endpoint, in file order."""
    found = endpoints.load()
    regs = registry.registrations()
    out = {}
    for row in registry.registry():
        if row["endpoint"] in found and row["served"]:
            out[row["alias"]] = Target(row["alias"], row["served"], row["endpoint"], found[row["endpoint"]],
                                       regs[row["alias"]])
    return out


def roster(named):
    """`([Target], [(alias, why not asked)])`. Named aliases are probed whatever their role or rest."""
    known = targets()
    if named:
        unknown = [a for a in named if a not in known]
        if unknown:
            raise SystemExit(f"not probed: {', '.join(unknown)} is not registered on a known endpoint "
                             "(see config/extra-openai-models.yaml and config/endpoints.json)")
        return [known[a] for a in named], []
    held, cooling = roles.ad_hoc(), learn.cooldowns()
    chosen, skipped = [], []
    for alias, target in known.items():
        if alias in held:
            skipped.append((alias, "skipped: ad hoc (name it with --model to probe it)"))
        elif alias in cooling:
            skipped.append((alias, f"skipped: cooling down until {cooling[alias]['until']}"))
        else:
            chosen.append(target)
    return chosen, skipped


def ask(target, fields):
    """One call: `(reply message dict, finish, model)` or raises transport.HTTPError / OSError / ValueError."""
    body = json.dumps({"model": target.served, **fields}).encode("utf-8")
    blob = transport.request("POST", target.url, {**target.headers, **target.auth()}, body, TIMEOUT)
    reply = json.loads(blob)
    choices = reply.get("choices") if isinstance(reply, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, dict):
        raise ValueError("no choice in the reply")
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    return message, choice.get("finish_reason"), reply.get("model") if isinstance(reply.get("model"), str) else ""


def evidence(cap, message, finish):
    """What shows `cap` in a reply (a non-empty text), or "" when it was not seen (PROBE-2)."""
    if cap == "tools":
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            function = calls[0].get("function") if isinstance(calls[0], dict) else None
            function = function if isinstance(function, dict) else {}
            return f"called {function.get('name')}({function.get('arguments')})"
        return "finish_reason tool_calls" if finish == "tool_calls" else ""
    for field in ("reasoning_content", "reasoning"):
        if isinstance(message.get(field), str) and message[field].strip():
            return message[field]
    content = message.get("content")
    return content if isinstance(content, str) and "<think>" in content else ""


def swapped(served, model):
    """Whether a reply's `model` names another model than the one asked for (improvement 6: norm_model)."""
    return bool(model) and model != served and catalog.norm_model(model) != catalog.norm_model(served)


def probe(target, gap, wait):
    """Both questions for one target; its output line's parts. Learns positives, errors and swaps."""
    said, served_as, cooling = [], "", False
    for n, (cap, fields) in enumerate(questions()):
        if cooling:
            said.append(f"{cap}: skipped (cooling down)")
            continue
        if n:
            wait(gap)
        try:
            message, finish, model = ask(target, fields)
        except transport.HTTPError as exc:
            text = exc.body.decode("utf-8", errors="replace")[:BODY_CHARS]
            cooling = learn.record(target.alias, f"{exc.code} {text}", WHERE)["cooldown_s"] > 0
            said.append(f"{cap}: HTTP {exc.code} (unknown)")
            continue
        except (OSError, ValueError) as exc:
            said.append(f"{cap}: unknown ({type(exc).__name__})")
            continue
        seen = evidence(cap, message, finish)
        if seen:
            learn.note_capability(target.alias, cap, seen)
        said.append(f"{cap}: {'yes' if cap == 'tools' else 'seen'}" if seen else f"{cap}: not seen")
        if not served_as and swapped(target.served, model):
            served_as = model
            learn.note_served_as(target.alias, target.served, model)
    return said + ([f"served as {served_as}"] if served_as else [])


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m benchwarmers.admin.probe_caps",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", default=[], metavar="ALIAS",
                        help="probe this model (repeatable), even ad hoc or cooling down")
    parser.add_argument("--gap", type=float, default=GAP, help=f"seconds between calls (default {GAP})")
    parser.add_argument("--dry-run", action="store_true", help="say what would be asked; call nothing, write nothing")
    args = parser.parse_args(argv)
    if args.gap < 0:
        parser.error("--gap: 0 or more seconds")
    return args


def main(argv=None, wait=time.sleep):
    args = parse(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8", errors="replace")
    try:
        chosen, skipped = roster(args.model)
    except RuntimeError as exc:  # endpoints.json unreadable (EP-1)
        raise SystemExit(str(exc))
    width = max([len(t.alias) for t in chosen] + [len(a) for a, _ in skipped] + [1])
    for alias, why in skipped:
        print(f"{alias:<{width}}  {why}", flush=True)
    asked = [t for t in chosen if not t.problem()]
    for target in chosen:
        if target.problem():
            print(f"{target.alias:<{width}}  {target.problem()}", flush=True)
    if not asked:
        print("nothing to probe" + ("" if skipped or chosen else ": no model is registered on a known endpoint"))
        return 0
    for n, target in enumerate(asked):
        if args.dry_run:
            print(f"{target.alias:<{width}}  would ask {target.served} at {target.url}: tools, reasoning")
            continue
        if n:
            wait(args.gap)
        print(f"{target.alias:<{width}}  " + "  ".join(probe(target, args.gap, wait)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

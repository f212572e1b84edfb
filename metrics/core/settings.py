"""Every setting in one table (style.md, "One table of settings", after datasette's `SETTINGS`): each
environment variable the product reads and each key of the data folder's config files that tunes it, with
its default, what it means and which modules read it.

A module reads a variable with `settings.env("BENCH_PORT")`, so its default lives here and nowhere else;
a name the table does not declare is a KeyError, and `tests/test_settings.py` reads the source to keep
every variable the code names declared. The config files stay read by the modules that own them (their
readers check the values); the test holds their defaults equal to the ones here.

The documentation's settings tables (docs/configuration.md) are `markdown()` (`bench settings --markdown`), and
`bench settings` shows each setting's effective value and where it came from (`screen()`).

Decisions: a variable set to blanks counts as unset, as nearly every reader had it already (where one did
not, a seed, a purpose or an admin token of blanks, blanks now read as none); the variables the product sets
for its own children, and those of other tools it looks up as they do, are declared too, and
`bench settings` shows them only when they are set.
"""

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import fileio

# a name holding one of these is shown masked (a database URL may carry a password)
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "DATABASE_URL")
HIDDEN = "set (hidden)"
UNSET = "(not set)"
VALUE_WIDTH = 36
FROM_FILE = "data folder"  # a config key's source: the file its row names, in the data folder


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting. `name` is the variable (a family ends in `<NAME>`), or the key in `file`."""

    name: str
    default: object  # a variable's text when unset or blank; a config key's JSON value when absent
    meaning: str
    readers: tuple[str, ...]  # the modules that read it, under `benchwarmers.`
    file: str = ""  # a config key's file in the data folder's config/; "" for a variable
    set_by: str = ""  # who sets a variable the product sets for its own children
    owner: str = ""  # whose variable it is, when another tool's, looked up as that tool does

    @property
    def kind(self) -> str:
        return "config" if self.file else "env"

    @property
    def family(self) -> str:
        """The prefix of a family of variables (`BENCHWARMERS_KEY_`), else `""`."""
        return self.name.partition("<")[0] if self.name.endswith(">") else ""

    @property
    def label(self) -> str:
        return f"{self.file} {self.name}" if self.file else self.name

    @property
    def secret(self) -> bool:
        """A variable shown masked. The data folder holds no secret (docs/configuration.md), so a config key
        is never one, `max_panels_per_key` included."""
        return self.kind == "env" and any(word in self.name.upper() for word in SECRET_WORDS)


def _env(name: str, default: str, meaning: str, *readers: str, set_by: str = "", owner: str = "") -> Setting:
    return Setting(name, default, meaning, readers, set_by=set_by, owner=owner)


def _config(file: str, key: str, default: object, meaning: str, *readers: str) -> Setting:
    return Setting(key, default, meaning, readers, file=file)


SETTINGS = (
    # -- where things are
    _env("BENCHWARMERS_HOME", "", "The data folder. Unset: the folder named in `.benchwarmers-home` at the top of the "
         "checkout, else the checkout itself; the installed `bench` and `benchwarmers` commands use the per-user "
         "folder (`~/.local/share/benchwarmers` on Linux). Read afresh whenever it changes.",
         "core.paths", "cli.launcher", "scripts.init", "demo.demo"),
    _env("LLM_USER_PATH", "", "llm's user folder: its `keys.json` (the endpoints' keys) and its copy of the "
         "registrations. Unset: `io.datasette.llm` in the OS's per-user config folder.", "core.paths", owner="llm"),
    _env("XDG_DATA_HOME", "", "Linux and BSD: the per-user data folder is `$XDG_DATA_HOME/benchwarmers` "
         "(unset: `~/.local/share`).", "core.paths", owner="The OS"),
    _env("XDG_CONFIG_HOME", "", "Linux and BSD: llm's user folder is `$XDG_CONFIG_HOME/io.datasette.llm` "
         "(unset: `~/.config`).", "core.paths", owner="The OS"),
    _env("LOCALAPPDATA", "", "Windows: the per-user data folder is `%LOCALAPPDATA%\\benchwarmers` (unset: the "
         "home folder).", "core.paths", owner="The OS"),
    _env("APPDATA", "", "Windows: llm's user folder is `%APPDATA%\\io.datasette.llm` (unset: the home folder).",
         "core.paths", owner="The OS"),
    # -- the servers and who may call them
    _env("BENCH_STORAGE", "", "Where the logs replicas share are kept: `folder` (the data folder's JSONL files) or "
         "`postgres` (the server `BENCH_DATABASE_URL` names). Unset: `postgres` when that URL is set, else `folder` "
         "(docs/replicas.md).", "store.store"),
    _env("BENCH_DATABASE_URL", "", "The Postgres server several replicas of one bench share, as a libpq URL "
         "(`postgresql://bench@db.internal/bench`); needs the `postgres` extra. Read once, at a process's first "
         "use of the store.", "store.store"),
    _env("BENCH_REPLICA_NAME", "", "The machine a replica runs on, as the onboarding queue's owner names it "
         "(docs/replicas.md): a batch owned on the same machine is taken over as soon as its process is gone, one "
         "owned elsewhere once its lease lapses. Unset: the host name; name replicas that share one (containers).",
         "admin.onboarding"),
    _env("BENCH_STORE_WAIT", "5", "Seconds a request waits for one of the Postgres store's connections (its server "
         "away, or every connection of the replica busy) before it is refused with a 503 that says so "
         "(docs/replicas.md). Read when the store opens.", "store.postgres"),
    _env("BENCH_STORE_LOCK_WAIT", "30", "Seconds a replica waits for a lock of the Postgres store another "
         "connection holds (pacing's, a configuration write's, a log's append) before it is refused with a 503 "
         "naming the lock: as long as the data folder's locks wait (LOCK-1). Read when the store opens.",
         "store.postgres"),
    _env("BENCH_PORT", "8122", "The dashboard's port (it answers the gateway's routes too), and the server the "
         "`bench` commands try first.", "server.guard", "dashboard.serve", "net.remote", "scripts.init"),
    _env("BENCH_GATEWAY_PORT", "8123", "The gateway's port (`bench gateway`, `python gateway.py`); the `bench` "
         "commands try it when nothing answers on the dashboard's.",
         "server.guard", "server.gateway", "dashboard.serve", "net.remote"),
    _env("BENCH_BIND", "127.0.0.1", "The address both servers listen on. Anything beyond this machine needs "
         "`BENCHWARMERS_ADMIN_TOKEN`.", "server.guard"),
    _env("BENCHWARMERS_ADMIN_TOKEN", "", "The dashboard's login (16+ characters), needed to listen beyond this "
         "machine; when set, every gateway call needs a gateway key. The `bench` commands send it to the "
         "dashboard's routes.", "server.guard", "net.remote", "core.keys"),
    _env("BENCHWARMERS_REQUIRE_KEYS", "", "Anything but empty, `0`, `false`, `no` or `off`: gateway calls need a "
         "gateway key on this machine too (with the admin token set they always do).",
         "server.guard", "dashboard.benchview"),
    _env("BENCHWARMERS_PUBLIC_URL", "", "The address callers reach the bench by, `http(s)://host[:port]` (behind a "
         "proxy): its host is answered and the gateway URL shown is under it.",
         "server.guard", "dashboard.benchview"),
    _env("BENCH_ALLOWED_HOSTS", "", "More Host names the servers answer to, comma-separated (beside 127.0.0.1, "
         "localhost and ::1 with the port).", "server.guard", "dashboard.benchview"),
    _env("BENCH_ALLOWED_ORIGINS", "", "Browser apps on other sites that may call, comma-separated "
         "`scheme://host[:port]` origins; unset: same origin only.", "server.guard", "dashboard.benchview"),
    _env("BENCH_TRUST_FORWARDED", "", "`1`, `true`, `yes` or `on`: a caller's address is the last "
         "`X-Forwarded-For` item (only behind a proxy of your own).", "server.guard"),
    _env("BENCH_LOG_ADDRESS", "", "`1`, `true`, `yes` or `on`: each access log line ends with the client's "
         "address.", "server.guard"),
    _env("BENCH_SESSION_HOURS", "8", "Hours a dashboard login lasts (above 0, at most 168), judged on every "
         "request: shortening it ends longer sessions at once.", "server.guard"),
    _env("BENCH_FAILED_LOGINS_PER_MINUTE", "60", "Wrong admin tokens a minute from all clients together (one "
         "client may make 10); past it every login and admin bearer waits up to a minute, while signed-in "
         "sessions go on.", "server.guard"),
    _env("BENCH_MAX_PER_ADDRESS", "128", "Connections at once from one client address (more get 503), read when "
         "a server starts.", "server.httpserver"),
    _env("BENCH_MCP_KEEPALIVE", "10", "Seconds between an MCP tool call's progress notifications: shorter for a "
         "proxy that drops idle connections sooner.", "server.mcp_server"),
    # -- the commands, clients of a running server
    _env("BENCHWARMERS_URL", "", "The server the `bench` commands and `bench mcp` talk to. Unset: the dashboard's "
         "port, then the gateway's when nothing answers there.", "net.remote"),
    _env("BENCHWARMERS_KEY", "", "The gateway key the `bench` commands and `bench mcp` send, when keys are "
         "required.", "net.remote", "core.keys"),
    _env("BENCHWARMERS_TIMEOUT", "900", "Seconds the `bench` commands wait for a reply (a panel takes minutes).",
         "net.remote"),
    # -- models and how they are called
    _env("BENCHWARMERS_KEY_<NAME>", "", "An endpoint's key, over llm's key store: `BENCHWARMERS_KEY_MY_HUB` is "
         "the key of `my-hub`. Never written to the data folder, printed or logged.",
         "core.keys", "dashboard.benchview"),
    _env("BENCH_CONNECT_PROVIDERS", "", "A JSON file laid over the shipped sign-in providers "
         "(`config/connect-providers.json`) field by field; it may add providers.", "providers.providers"),
    _env("BENCH_CLIENT", "", "How models are called: `builtin` or `llm`. Unset: `config/client.json`'s `client`.",
         "calling.client", "dashboard.benchview", "dashboard.serve"),
    _env("BENCH_LLM_INPROCESS", "1", "`0`: the llm backend runs `llm -m <alias>` in a subprocess instead of "
         "llm's Python API.", "calling.llm_backend"),
    _env("BENCH_PURPOSE", "", "The usage ledger's purpose for calls that name none (a script's own calls).",
         "calling.client"),
    _env("BENCH_ALLOW_PAID", "", "`1`: the free-tier guard lets models that went paid be called, for this run "
         "(else name their aliases in `config/connections.json`'s `allow_paid`).", "models.freetier"),
    _env("BENCH_POLICY_SEED", "", "Seeds the Thompson policy's draws, for a repeatable run. Unset: random.",
         "panel.policy", "panel.route_mode"),
    _env("BENCH_MODELSDEV_URL", "https://models.dev/api.json", "Where the models.dev feed is read (a mirror, or "
         "the tests' server).", "models.sources"),
    _env("BENCH_FREELLMAPI_URL", "https://api.freellmapi.co/v1/latest", "Where the FreeLLMAPI feed is read.",
         "models.sources"),
    _env("BENCH_OPENROUTER_MODELS_URL", "https://openrouter.ai/api/v1/models", "Where OpenRouter's public model "
         "list is read.", "models.sources"),
    _env("BENCH_REBENCH_API", "https://datasets-server.huggingface.co", "The datasets-server API the real-bug "
         "importer (`suite.rebench`) reads SWE-rebench-V2 rows from.", "suite.rebench"),
    _env("BENCH_REBENCH_RAW", "https://raw.githubusercontent.com", "Where the real-bug importer reads the "
         "projects' files.", "suite.rebench"),
    # -- set by the product for its own children
    _env("BENCHWARMERS_PROG", "bench", "The command's name as typed (`bench` or `benchwarmers`), which the CLI's "
         "messages use.", "cli.cli", "cli.launcher", set_by="the launcher"),
    _env("BENCHWARMERS_LAUNCHER", "", "How the command was installed (`pip`, or a wrapper's own word): when set, "
         "`init` writes no pointer file into the install.", "cli.launcher", "scripts.init", set_by="the launcher"),
    _env("BENCHWARMERS_HOME_DEFAULTED", "", "`1`: the launcher chose the per-user folder itself "
         "(`BENCHWARMERS_HOME` was unset), and `bench paths` says so.", "core.paths", "scripts.init",
         set_by="the launcher"),
    _env("BENCHWARMERS_FIRST_RUN", "", "`1`: the launcher runs `init` before a server's first start, so `init` "
         "says the dashboard starts now.", "scripts.init", set_by="the launcher"),
    _env("BENCHWARMERS_DEMO", "", "`1`: the data folder is the demo's throwaway one, so a reply's verdict command "
         "names it.", "panel.panel", set_by="the demo"),
    _env("BENCH_ONBOARD_LOG", "", "The log an onboarding child writes to, named in the issue it records.",
         "scripts.onboard", set_by="the onboarding queue"),
    # -- config/gateway.json
    _config("gateway.json", "max_calls", 5, "Seats one panel asks at most: members first, then explorers.",
            "panel.collections"),
    _config("gateway.json", "max_explorers", 2, "Explorer seats at most (above 2 has no effect).",
            "panel.collections"),
    _config("gateway.json", "policy", "counted", "How the record picks a merged reply's merger and the member route "
            "mode starts on: `counted` (most useful verdicts) or `thompson` (Concepts, \"Learning from verdicts\").",
            "panel.collections"),
    _config("gateway.json", "first_byte_timeout", 180, "Seconds a seat's upstream may send nothing after the "
            "request before the seat ends as an error (0: no limit; GATEWAY.md, \"Faults\").", "panel.collections"),
    _config("gateway.json", "idle_timeout", 60, "Seconds a seat's upstream may send nothing after its last byte "
            "(0: no limit).", "panel.collections"),
    _config("gateway.json", "max_panels", 128, "Panels in flight in one process; one more is refused as busy.",
            "panel.collections"),
    _config("gateway.json", "max_panels_per_key", 32, "Panels in flight for one gateway key.", "panel.collections"),
    _config("gateway.json", "verdicts_per_key_day", 1000, "Verdict lines one gateway key may add to the offload "
            "log a day (past it, 429 until midnight; 0: no cap). Callers without a key, the dashboard and the CLI "
            "are not counted.", "panel.collections", "panel.offload"),
    _config("gateway.json", "stop_grace", 5, "Seconds SIGTERM or Ctrl-C gives the panels in flight.",
            "panel.collections"),
    _config("gateway.json", "calls_log_max_mb", 64, "The calls log's size before it is rotated, in MB (0: never).",
            "panel.collections"),
    _config("gateway.json", "calls_log_keep", 3, "Rotated calls logs kept.", "panel.collections"),
    _config("gateway.json", "calls_log_prompts", True, "Whether the calls log keeps prompts (PRIVACY.md).",
            "panel.collections"),
    # -- config/collections.json: a collection's own settings beside its members (GATEWAY.md)
    _config("collections.json", "<name>.council.orders", 2, "How many orders each ranker of a council reply sees "
            "the answers in: 2 (the second reversed, so position bias shows) or 1 (half the ranking calls).",
            "panel.collections"),
    _config("collections.json", "<name>.council.chairman", "", "The model that writes a council reply from the "
            "answers and the peers' ranking; unset, the merger's rule picks one.", "panel.collections"),
    # -- the other settings files
    _config("scheduler.json", "mode", "off", "The scheduler's mode: `off`, `log-only` (writes what it would run "
            "to `runs/scheduler.log`) or `run`.", "admin.jobs"),
    _config("scheduler.json", "jobs", {}, "Jobs switched off, `{name: false}`; a job not named is on.",
            "admin.jobs"),
    _config("client.json", "client", "builtin", "How models are called when `BENCH_CLIENT` is unset: `builtin` or "
            "`llm` (Settings, `bench settings client`).", "calling.client"),
    _config("ui.json", "theme", "hardwood", "The dashboard's theme.", "core.themes"),
    _config("connections.json", "paid", [], "Connections paid by subscription: a price there raises no alert.",
            "models.connections"),
    _config("connections.json", "preferred", [], "Connections preferred in a tie.", "models.connections"),
    _config("connections.json", "allow_paid", [], "Aliases the free-tier guard lets call a model that went paid.",
            "models.connections"),
    _config("connections.json", "models_dev", {}, "`{connection: models.dev provider id}`, over the built-in map.",
            "models.connections"),
    _config("connections.json", "free_in_own_client_only", {}, "`{provider: true}`: free only in the provider's "
            "own client.", "models.connections"),
    _config("connections.json", "hosts", {}, "`{host: name}`: names for hubs reached by a bare IP address.",
            "models.connections"),
    _config("connect.json", "client_ids", {}, "Your own sign-in apps' client ids, `{provider: id}` (Use your own "
            "app).", "providers.providers"),
    _config("connect.json", "host_id", "", "This install's id (`urn:uuid:...`), made on first use; a sign-in "
            "provider's `{host_id}` parameter.", "providers.providers"),
    _config("model-options.json", "<alias>", {}, "A model's request defaults, `{\"max_tokens\": N}` (the model "
            "popup, `bench model max-tokens`).", "models.registry"),
    _config("connection-limits.json", "<connection>", {}, "The rate limits you entered for a connection: `rpm`, "
            "`rpd`, `tpm`, `tpd`, `rpmo` (the Endpoints page, `bench endpoint limits`).", "calling.pacing"),
    _config("repos.json", "<name>", {}, "A checkout the suite seeds bugs from and attaches files of, "
            "`{name: folder}`.", "suite.tasks"),
)

VARIABLES = {s.name: s for s in SETTINGS if s.kind == "env"}
Row = tuple[Setting, str, str]  # a setting, its effective value as text, where that came from


def env(name: str) -> str:
    """The variable `name` as set, or its default from the table when it is unset or blank."""
    value = os.environ.get(name, "")
    return value if value.strip() else str(VARIABLES[name].default)


def family(prefix: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`{the rest of the name: value}` of each set variable of a family (`BENCHWARMERS_KEY_`), its prefix in any
    case; from `environ` when given, else this process's environment."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name in environ:  # names only: every panel's call log asks, and decoding each value costs more
        if name.upper().startswith(prefix) and len(name) > len(prefix) and environ[name]:
            found[name[len(prefix):]] = environ[name]
    return found


def default(name: str) -> str:
    """A variable's default, for a reader that falls back to it on a value it cannot use."""
    return str(VARIABLES[name].default)


# -- the documented table --------------------------------------------------------------------------------------

def _cell(text: object) -> str:
    return str(text).replace("|", "\\|")


def _shown_default(setting: Setting) -> str:
    if setting.kind == "env":
        return f"`{setting.default}`" if setting.default else ""
    return f"`{json.dumps(setting.default)}`" if setting.default not in ("", [], {}) else ""


def _meaning(setting: Setting) -> str:
    if setting.set_by:
        return f"Set by {setting.set_by} for its children. {setting.meaning}"
    if setting.owner:
        return f"{setting.owner}'s variable. {setting.meaning}"
    return setting.meaning


def markdown() -> str:
    """The settings tables (docs/configuration.md): the environment's variables, then the config files' keys."""
    return "\n\n".join([_table("Variable", [s for s in SETTINGS if s.kind == "env"]),
                         _table("Key in the data folder's `config/`", [s for s in SETTINGS if s.kind == "config"])])


def _table(first: str, rows: list[Setting]) -> str:
    lines = [f"| {first} | Default | Meaning | Read by |", "|---|---|---|---|"]
    for s in rows:
        name = f"`{s.file}` `{s.name}`" if s.file else f"`{s.name}`"
        readers = ", ".join(f"`{r}`" for r in s.readers)
        lines.append(f"| {name} | {_shown_default(s)} | {_cell(_meaning(s))} | {readers} |")
    return "\n".join(lines)


# -- `bench settings`: the effective values ---------------------------------------------------------------------

def effective(environ: Mapping[str, str], folder: Path) -> list[Row]:
    """`[(setting, value, source)]` for the environment `environ` and the data folder `folder`: the value as
    text, the source `environment`, `data folder` (the row's file there) or `default`. A variable the product
    sets for its children, or another tool's, is left out unless it is set."""
    files: dict[str, dict[str, Any]] = {}
    rows: list[Row] = []
    for s in SETTINGS:
        if s.kind == "env":
            row = _variable(s, environ)
        else:
            if s.file not in files:
                files[s.file] = fileio.read_json(folder / "config" / s.file)
            row = _key(s, files[s.file])
        if row[2] != "default" or not (s.set_by or s.owner):
            rows.append(row)
    return rows


def _variable(s: Setting, environ: Mapping[str, str]) -> Row:
    if s.family:  # the names, never a value: each is a secret
        named = sorted(n.lower().replace("_", "-") for n in family(s.family, environ))
        return (s, f"set for {', '.join(named)}" if named else UNSET, "environment" if named else "default")
    value = environ.get(s.name, "")
    if not value.strip():
        return s, str(s.default) or UNSET, "default"
    return s, HIDDEN if s.secret else value, "environment"


def _key(s: Setting, data: Mapping[str, Any]) -> Row:
    if s.name.startswith("<"):  # one entry per alias, connection, checkout or collection: the entries that set it
        path = s.name.split(".")[1:]
        named = sorted(k for k, v in data.items() if not k.startswith("_") and _holds(v, path))
        return s, ", ".join(named) if named else "none", FROM_FILE if named else "default"
    if s.name in data:
        return s, _json(data[s.name]), FROM_FILE
    return s, _json(s.default), "default"


def _holds(value: object, path: list[str]) -> bool:
    """Whether `value` has the keys of `path` nested in it (`["council", "orders"]`); `[]` always."""
    if not path:
        return True
    return isinstance(value, dict) and path[0] in value and _holds(value[path[0]], path[1:])


def _json(value: object) -> str:
    """A config value as `bench settings` shows it: text bare, anything else as JSON."""
    if isinstance(value, str):
        return value or UNSET
    return json.dumps(value, ensure_ascii=False)


def screen(rows: list[Row], folder: Path, why: str) -> str:
    """`bench settings`: the data folder, then one line a setting: its name, effective value and source."""
    width = max(len(s.label) for s, _, _ in rows) + 2

    def cut(value: str) -> str:
        return value if len(value) <= VALUE_WIDTH else value[:VALUE_WIDTH - 1] + "…"

    lines = [f"Data folder: {folder} ({why})", "", f"{'SETTING':<{width}}{'VALUE':<{VALUE_WIDTH + 2}}FROM"]
    lines += [f"{s.label:<{width}}{cut(value):<{VALUE_WIDTH + 2}}{source}" for s, value, source in rows]
    return "\n".join(lines)

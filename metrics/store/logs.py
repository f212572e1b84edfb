"""The logs the store keeps, each named by its place in the data folder."""

Log = tuple[str, ...]  # a log's parts inside the data folder

OFFLOADS: Log = ("metrics", "offloads.jsonl")  # the record: panel seats' lines and verdicts (panel.offload)
CALLS: Log = ("runs", "gateway", "calls.jsonl")  # one line per panel (panel.panel, CLG-1)
ROUTES: Log = ("runs", "gateway", "routes.jsonl")  # one line per route-mode turn (panel.route_mode, RT-22)
CONVERSATIONS: Log = ("runs", "gateway", "conversations")  # route mode's records, one per conversation key
USAGE: Log = ("metrics", "usage")  # the usage ledger: a log a month inside, `<YYYY-MM>.jsonl` (calling.ledger)
CHANGES: Log = ("config", "changes.jsonl")  # the change log: one line per edit a person made (core.changes, LOG-1)
LOGS = (OFFLOADS, CALLS, ROUTES, CHANGES)  # the logs `bench store import` and `export` move, with the ledger's months
GATEWAY_KEYS: Log = ("config", "gateway-keys.json")  # a document: the gateway keys' digests (server.gatekeys)
ONBOARD_QUEUE: Log = ("runs", "onboard-queue.json")  # a document: the onboarding queue and its owner (admin.onboarding)
ONBOARD_LOGS: Log = ("runs", "onboard-logs")  # records, one per onboarding log: its copy on a shared store
ALERTS: Log = ("metrics", "alerts.json")  # a document: what is wrong and what to do about it (models.alerts, AL-1)
# The configuration the dashboard edits and the limits learned from providers' errors: on Postgres every reader
# and writer of these files goes through the store (`core.fileio.share`), so an edit made on one replica is
# read by every replica at its next request. Each is named as `paths.file` names it.
CONFIG: tuple[Log, ...] = tuple(("config", name) for name in (
    "collections.json", "gateway.json",  # panel.collections: the collections and the gateway's settings
    "extra-openai-models.yaml", "decision-models.json",  # models.registry: the registrations
    "endpoints.json", "connection-limits.json", "connections.json",  # models.endpoints, admin.endpointedit, connections
    "model-overrides.json", "model-options.json",  # admin.modelfacts: a person's facts and call options
    "model-roles.json", "retired.json", "alias-history.json",  # panel.roles, panel.roster, models.aliases
    "model-learned.json",  # models.learn: limits and context windows learned from providers' errors
    "dismissed.json", "provider-tags.json", "scheduler.json", "ui.json", "connect.json",  # the other pages' edits
    "client.json",  # calling.client: how models are called (the Settings page's choice, BK-4)
))
SESSIONS: Log = ("runs", "admin-sessions.json")  # a document: the epoch every login cookie signs (server.guard)
SCHEDULED: Log = ("runs", "scheduler-state.json")  # a document: each job's last due time (admin.scheduler, SCH-6)
# the documents that outlive a run: what the store holds, and what `bench store import` and `export` move
DOCUMENTS: tuple[Log, ...] = (GATEWAY_KEYS, *CONFIG, ALERTS, SESSIONS, SCHEDULED)
# the data folder's files every reader and writer reaches through `core.fileio` (`fileio.share`): on Postgres
# they go to the store, so every replica's dashboard shows one change log and one set of alerts, an alert one
# replica raises another clears, a login cookie one replica signs every replica takes (and ending sessions ends
# them on all), and each scheduled job's slot is claimed by one replica's tick, not run once on each
SHARED_FILES: tuple[Log, ...] = (*CONFIG, ALERTS, CHANGES, SESSIONS, SCHEDULED)


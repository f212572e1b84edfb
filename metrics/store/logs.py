"""The logs the store keeps, each named by its place in the data folder."""

Log = tuple[str, ...]  # a log's parts inside the data folder

OFFLOADS: Log = ("metrics", "offloads.jsonl")  # the record: panel seats' lines and verdicts (panel.offload)
CALLS: Log = ("runs", "gateway", "calls.jsonl")  # one line per panel (panel.panel, CLG-1)
ROUTES: Log = ("runs", "gateway", "routes.jsonl")  # one line per route-mode turn (panel.route_mode, RT-22)
CONVERSATIONS: Log = ("runs", "gateway", "conversations")  # route mode's records, one per conversation key
USAGE: Log = ("metrics", "usage")  # the usage ledger: a log a month inside, `<YYYY-MM>.jsonl` (calling.ledger)
LOGS = (OFFLOADS, CALLS, ROUTES)
GATEWAY_KEYS: Log = ("config", "gateway-keys.json")  # a document: the gateway keys' digests (server.gatekeys)
DOCUMENTS = (GATEWAY_KEYS,)  # the documents that outlive a run: `bench store import` and `export` move them too  # what the store holds, and what `bench store import` and `export` move


"""The logs the store keeps, each named by its place in the data folder, and the error of a store out of reach."""

Log = tuple[str, ...]  # a log's parts inside the data folder

OFFLOADS: Log = ("metrics", "offloads.jsonl")  # the record: panel seats' lines and verdicts (panel.offload)
CALLS: Log = ("runs", "gateway", "calls.jsonl")  # one line per panel (panel.panel, CLG-1)
ROUTES: Log = ("runs", "gateway", "routes.jsonl")  # one line per route-mode turn (panel.route_mode, RT-22)
CONVERSATIONS: Log = ("runs", "gateway", "conversations")  # route mode's records, one per conversation key
USAGE: Log = ("metrics", "usage")  # the usage ledger: a log a month inside, `<YYYY-MM>.jsonl` (calling.ledger)
LOGS = (OFFLOADS, CALLS, ROUTES)  # what the store holds, and what `bench store import` and `export` move


class Unavailable(OSError):
    """The chosen store cannot be used (no server, a refused login, a schema newer than this bench's); the
    message says which server and why. At start a replica does not start with it; later it is an I/O error of
    the store, met where a refused write of the data folder is (an OSError, as `fileio.WriteFailed` is)."""

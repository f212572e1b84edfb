"""The logs the store keeps, each named by its place in the data folder, and the error of a store out of reach."""

Log = tuple[str, ...]  # a log's parts inside the data folder

OFFLOADS: Log = ("metrics", "offloads.jsonl")  # the record: panel seats' lines and verdicts (panel.offload)
CALLS: Log = ("runs", "gateway", "calls.jsonl")  # one line per panel (panel.panel, CLG-1)
LOGS = (OFFLOADS, CALLS)  # what the store holds, and what `bench store import` and `export` move


class Unavailable(RuntimeError):
    """The chosen store cannot be used (no server, a refused login, a schema newer than this bench's); the
    message says which server and why, and a replica does not start with it."""

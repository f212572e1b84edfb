"""The logs the store keeps, each named by its place in the data folder."""

Log = tuple[str, ...]  # a log's parts inside the data folder

OFFLOADS: Log = ("metrics", "offloads.jsonl")  # the record: panel seats' lines and verdicts (panel.offload)
CALLS: Log = ("runs", "gateway", "calls.jsonl")  # one line per panel (panel.panel, CLG-1)
LOGS = (OFFLOADS, CALLS)  # what the store holds, and what `bench store import` and `export` move

"""admin"""

# The scheduler's loop (`python -m benchwarmers.admin.scheduler --run`) and the jobs' modules may be all a process
# loads of the bench: loading the store here registers it with `core.fileio`, as `models` does, so on Postgres the
# scheduler's switches and state, the alerts and the change log are the store's documents, never the process's own
# files (docs/replicas.md).
from ..store import store as _store  # noqa: F401

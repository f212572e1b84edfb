"""models"""

# Every process that reads the bench's configuration loads this package (a script, an onboarding run, a call's
# child included). Loading the store here registers it with `core.fileio`, which then opens it at the first file
# read: on Postgres the configuration is a document there, never the process's own file (docs/replicas.md).
from ..store import store as _store  # noqa: F401

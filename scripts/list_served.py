"""What the default endpoint serves, and which of it is registered (suite-cli-mcp.md §3.9, LS-1).

    python -m benchwarmers.scripts.list_served [substring]

Each served id (filtered case-insensitively by the substring) is marked `[registered]` when some
registration's `model_name` is that id, else `[ MISSING  ]`; then a count line and, when anything
is missing, how to add it. Never prints a key.

Decision beyond the reference (§13.14): with no endpoint configured it prints the "no endpoints
configured" message and how to add one (exit 1), not a traceback.
"""

import sys

from ..core import console
from ..models import endpoints, registry
from ..providers import renewal


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1:
        print("usage: python -m benchwarmers.scripts.list_served [substring]", file=sys.stderr)
        return 2
    wanted = argv[0].lower() if argv else ""
    try:
        name = endpoints.default()
        served = sorted(renewal.models(name))
    except RuntimeError as exc:
        console.say(exc)
        return 1
    except Exception as exc:  # any failure to list is "could not reach"
        console.say(f"could not reach {endpoints.base(name)}: {type(exc).__name__}: {exc}")
        return 1
    registered = set(registry.names().values())
    shown = [s for s in served if wanted in s.lower()]
    for model in shown:
        print(f"{'[registered]' if model in registered else '[ MISSING  ]'} {model}")
    missing = [s for s in served if s not in registered]
    print(f"{len(shown)} shown of {len(served)} served; {len(missing)} unregistered")
    if any(s not in registered for s in shown):
        print("to add one: python -m benchwarmers.scripts.onboard SERVED_NAME (registers it and syncs llm), "
              "or add it from the dashboard's Models page")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python gateway.py`: the panel gateway, from a checkout (installed, the same is `bench gateway`).

The gateway itself is `metrics/server/gateway.py`; this file is only the door the design card names, so
that a checkout serves with nothing installed. Run from the checkout's top, `metrics` is importable as
it stands: no install and no path edits needed.
"""

from metrics.server.gateway import main

if __name__ == "__main__":
    main()

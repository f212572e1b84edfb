"""`python serve.py`: the dashboard (and the gateway's routes), from a checkout (installed: `bench serve`).

The dashboard server itself is `metrics/dashboard/serve.py`; this file is only the door the design card
names, so that a checkout serves with nothing installed.
"""

from metrics.dashboard.serve import main

if __name__ == "__main__":
    main()

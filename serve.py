"""The dashboard (port 8122). Not built yet: see the dashboard issue."""

import sys

if __name__ == "__main__":
    print("serve.py: the dashboard is not built yet; run `python gateway.py --demo` for the panel gateway.",
          file=sys.stderr)
    sys.exit(2)

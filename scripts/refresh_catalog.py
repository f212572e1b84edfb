"""Refresh the model catalog from the public feeds, OpenRouter and the endpoints' own listings (CAT-6..11).

    python -m benchwarmers.scripts.refresh_catalog          refresh every registered model; a summary line and one row each
    python -m benchwarmers.scripts.refresh_catalog ALIAS    print what the bench knows of ALIAS now (catalog.info, JSON)

The scheduler's daily `catalog` job (06:00) runs this file. It exits 1 with
`cannot read OpenRouter's catalog: <err>` when OpenRouter's list cannot be read, writing nothing; feeds
and endpoints that fail only leave their layer out. Feed addresses: BENCH_MODELSDEV_URL,
BENCH_FREELLMAPI_URL, BENCH_OPENROUTER_MODELS_URL (docs/suite.md, "Catalog and Discover").
"""

import argparse
import json
import sys

from ..core import console
from ..models import catalog, catalogrefresh


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("alias", nargs="?", help="print this model's merged record instead of refreshing")
    args = parser.parse_args(argv)
    if args.alias:
        print(json.dumps(catalog.info(args.alias, fetch=True), indent=2))
        return 0
    try:
        models = catalogrefresh.refresh()
    except (OSError, ValueError) as exc:
        console.say(f"cannot read OpenRouter's catalog: {type(exc).__name__}: {exc}")
        return 1
    print("\n".join(catalogrefresh.summary(models)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

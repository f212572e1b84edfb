"""The maintenance scripts (suite-cli-mcp.md §3): `python -m benchwarmers.scripts.NAME`, or through `bench`.

They sit above the rest of the package: they import it, nothing imports them.
"""

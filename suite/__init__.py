"""The review-task suite (suite-cli-mcp.md §2): tasks, runs and saved answers.

Built on top of the rest of the package: the suite imports it, never the other way round. The scorer
it shares with the router is `models.scoring`; the router reads saved answers through
`models.history`.
"""

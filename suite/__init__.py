"""The review-task suite (suite-cli-mcp.md §2): tasks, runs and saved answers.

Built on top of `metrics`: the suite imports `metrics`, never the other way round. The scorer
it shares with the router is `metrics.scoring`; the router reads saved answers through
`metrics.history`.
"""

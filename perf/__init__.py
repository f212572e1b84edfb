"""The performance probe (`python -m benchwarmers.perf.run`): the availability tier the scheduler runs."""

"""Types at the seams (style.md): every function of the `server` package and of the dashboard's server is
annotated, and mypy finds nothing wrong with them (`[tool.mypy]` in pyproject.toml names the modules)."""

import subprocess
import sys

from benchwarmers.core import paths


def test_mypy_passes_on_the_servers():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=paths.CODE, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

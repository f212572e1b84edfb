"""The type check CI runs: mypy with pyproject.toml's `[tool.mypy]` (the packages listed in `files`, every def in
them annotated) reports no error."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_annotated_packages_pass_mypy():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

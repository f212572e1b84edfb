"""scripts/sync_config.py (REG-9, SY-1..3), run as the command a user types."""

import json
import subprocess

from benchwarmers.core import paths
from benchwarmers.models import registry

SCRIPT = paths.module_command("scripts.sync_config")


def run(*args):
    return subprocess.run([*SCRIPT, *args], capture_output=True, text=True)


def register_one(home):
    endpoints = paths.file("config", "endpoints.json")
    endpoints.write_text(json.dumps({"local": {"base": "http://127.0.0.1:9/v1", "key": ""}}))
    registry.add_registration("alpha", "vendor/alpha:free", "local")


def test_sy1_missing_source_exits_1(home):
    result = run()
    assert result.returncode == 1 and "does not exist" in result.stderr


def test_sy1_sy2_push_check_pull(home, llmdir):
    register_one(home)
    paths.file("config", "model-options.json").write_text(json.dumps({"alpha": {"temperature": 0.3}}))
    assert run("--check").returncode == 1
    pushed = run()
    assert pushed.returncode == 0 and "1 model option(s) pushed" in pushed.stdout
    assert (llmdir / "extra-openai-models.yaml").read_text() == registry.path().read_text()
    assert json.loads((llmdir / "model_options.json").read_text())["alpha"] == {"temperature": 0.3}
    check = run("--check")
    assert check.returncode == 0 and check.stdout.startswith("identical")
    (llmdir / "extra-openai-models.yaml").write_text(registry.path().read_text() + "\n# edited in llm\n")
    assert run("--pull").returncode == 0
    assert registry.path().read_text().endswith("# edited in llm\n")
    assert list(paths.file("config").glob("extra-openai-models.yaml.*.bak"))

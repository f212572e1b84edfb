"""Shared fixtures: every test gets its own data folder and llm user folder."""

import os

import pytest

from metrics import paths


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """A fresh data folder (BENCHWARMERS_HOME) and llm user folder (LLM_USER_PATH) per test."""
    data = tmp_path / "data"
    llmdir = tmp_path / "llm"
    llmdir.mkdir()
    monkeypatch.setenv("BENCHWARMERS_HOME", str(data))
    monkeypatch.setenv("LLM_USER_PATH", str(llmdir))
    for name in list(os.environ):
        if name.upper().startswith("BENCHWARMERS_KEY") or name in ("BENCH_CLIENT", "BENCHWARMERS_ADMIN_TOKEN"):
            monkeypatch.delenv(name)
    paths.reload()
    yield data
    paths.reload()


@pytest.fixture
def llmdir(home):
    return paths.llm_dir()

"""Endpoint keys (KEY-2..8)."""

import json
import os
import stat

import pytest

from benchwarmers.core import keys


def test_key2_missing_or_broken_store_reads_empty(llmdir):
    assert keys.stored() == {}
    (llmdir / "keys.json").write_text("{not json")
    assert keys.stored() == {}


def test_key3_key4_env_overlay(llmdir, monkeypatch):
    (llmdir / "keys.json").write_text(json.dumps({"openrouter-2": "stored", "other": "o"}))
    monkeypatch.setenv("BENCHWARMERS_KEY_OPENROUTER_2", "from-env")
    monkeypatch.setenv("BENCHWARMERS_KEY_MY_HUB", "hub")
    monkeypatch.setenv("BENCHWARMERS_KEY", "gateway-key-not-an-endpoint-key")
    monkeypatch.setenv("BENCHWARMERS_KEY_EMPTY", "")
    assert keys.keys() == {"openrouter-2": "from-env", "other": "o", "my-hub": "hub"}
    assert keys.key("my-hub") == "hub"
    assert keys.key("") == ""


def test_key5_set_key_writes_only_stored_set_atomically(llmdir, monkeypatch):
    monkeypatch.setenv("BENCHWARMERS_KEY_ENVONLY", "env-secret")
    keys.set_key("a", "1")
    keys.set_key("b", "2")
    text = (llmdir / "keys.json").read_text()
    assert json.loads(text) == {"a": "1", "b": "2"}
    assert text.endswith("\n") and '\n  "a"' in text
    assert "env-secret" not in text
    assert stat.S_IMODE(os.stat(llmdir / "keys.json").st_mode) == 0o600
    assert not [p for p in os.listdir(llmdir) if p.endswith(".part")]


def test_key6_refresh_token_is_a_plain_entry(llmdir):
    keys.set_key("chatgpt.refresh", "r")
    assert keys.key("chatgpt.refresh") == "r"


def test_key8_admin_key(llmdir, monkeypatch):
    keys.set_key("hub", "own")
    assert keys.admin_key("hub") == "own"
    assert keys.admin_key("hub", fallback=False) == ""
    monkeypatch.setenv("BENCHWARMERS_KEY_HUB_ADMIN", "adm")
    assert keys.admin_key("hub") == "adm"
    keys.set_key("special", "sp")
    assert keys.admin_key("hub", "special") == "sp"


def test_key5_set_key_creates_llm_folder(monkeypatch, tmp_path):
    folder = tmp_path / "not" / "yet"
    monkeypatch.setenv("LLM_USER_PATH", str(folder))
    keys.set_key("a", "1")
    assert json.loads((folder / "keys.json").read_text()) == {"a": "1"}


def test_key5_a_damaged_store_is_refused_not_replaced(llmdir):
    """Reading a damaged keys.json as {} and writing back would lose every other secret in it."""
    damaged = '{"openrouter": "sk-kept-secret", '
    (llmdir / "keys.json").write_text(damaged)
    with pytest.raises(RuntimeError, match="keys.json cannot be read") as failed:
        keys.set_key("new", "value")
    assert "sk-kept-secret" not in str(failed.value)
    assert (llmdir / "keys.json").read_text() == damaged
    (llmdir / "keys.json").write_text('["not", "an object"]')
    with pytest.raises(RuntimeError, match="not a JSON object"):
        keys.delete_key("new")
    (llmdir / "keys.json").write_text("")
    keys.set_key("new", "value")
    assert keys.stored() == {"new": "value"}


def test_key3_prefix_is_matched_case_insensitively(monkeypatch):
    monkeypatch.setenv("benchwarmers_key_Lower_Case", "v")
    assert keys.env_keys() == {"lower-case": "v"}


def test_key7_hide_takes_every_known_secret_out(llmdir, monkeypatch):
    keys.set_key("short", "abc")
    keys.set_key("long", "stored-secret-1234")
    monkeypatch.setenv("BENCHWARMERS_KEY_ENV", "env-secret-56789")
    text = keys.hide("sent stored-secret-1234 and env-secret-56789, abc stays")
    assert text == "sent *** and ***, abc stays"
    assert keys.names() == ["env", "long", "short"]

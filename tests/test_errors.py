"""One error model (issue 28, item 3; `core/errors.py`): a refusal carries its own status and messages, and one
place turns any exception into the reply; an exception nobody planned for is a 500 whose short id is logged
with its traceback on stderr, never a 503 and never a 400 that blames the caller."""

import errno
import re

import pytest

from benchwarmers.core import errors, fileio
from benchwarmers.dashboard import serve
from benchwarmers.panel import roster
from test_serve import call


def directory():
    """The model directory with a bug in it: a hand-edited `question_types` of 5 once made the real one fail
    so (`roster.directory`, before `registry.decision_models()` read a value of the wrong type as absent)."""
    return list(5)


@pytest.fixture
def buggy(monkeypatch):
    """Every route that reads the model directory meets the bug, as every one met that hand-edited file."""
    monkeypatch.setattr(roster, "directory", directory)


@pytest.fixture
def dash(bench):
    server = serve.serve("127.0.0.1", 0)
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def logged(err, said):
    """The id a reply names, checked against stderr: the same id opens an entry holding the traceback, which
    ends with the exception the reply names."""
    found = re.fullmatch(r"the server failed \((\w+): (.*)\); error id ([0-9a-f]{8})", said)
    assert found, said
    kind, text, bug = found.groups()
    entry = err.split(f"error {bug}: the server failed\n", 1)[1]
    assert entry.startswith("Traceback (most recent call last):\n") and f"\n{kind}: {text}\n" in entry
    return bug


def test_a_bug_met_by_a_write_is_a_500_with_the_id_its_traceback_is_logged_under(dash, buggy, capfd):
    """Reading the model directory fails on a bug. The dashboard answered a model edit `400 bad request: 'int'
    object is not iterable`, as if the caller had sent a bad body; it is the server's bug, a 500 whose id the
    log has, with where it failed."""
    capfd.readouterr()
    status, _, body = call(dash, "POST", "/api/model", {"alias": "alpha", "new_role": "code"})
    assert status == 500 and body["ok"] is False and len(body["errors"]) == 1
    err = capfd.readouterr().err
    logged(err, body["errors"][0])
    assert "TypeError: 'int' object is not iterable" in err and "in directory" in err  # where it failed


def test_a_bug_met_by_a_page_is_a_500_too_and_each_has_its_own_id(dash, buggy, capfd):
    """The same bug under a GET route: a 500 with an id, not a 400 or a dropped connection (IMP-3); two
    requests, two ids, each logged once."""
    capfd.readouterr()
    first = call(dash, "GET", "/api/models")
    second = call(dash, "POST", "/api/remove", {"alias": "judge"})
    err = capfd.readouterr().err
    assert first[0] == second[0] == 500
    ids = [logged(err, reply[2]["errors"][0]) for reply in (first, second)]
    assert ids[0] != ids[1] and all(err.count(f"error {bug}: ") == 1 for bug in ids)


def answer(exc):
    refusal = errors.planned(exc)
    return refusal.status, refusal.message, refusal.reply_headers()


def test_planned_refusals_keep_their_status_and_a_raw_builtin_is_a_bug(capfd):
    """A refusal class names its status; the data folder refusing a write is a 507 or 503; a KeyError, a
    LookupError or a ValueError nobody raised as a refusal is no longer a 503 or a 400."""
    assert answer(errors.UnknownCall("no offload with call id 'x'")) == (404, "no offload with call id 'x'", {})
    assert answer(errors.Busy("wait")) == (503, "wait", {"Retry-After": "2"})
    assert errors.planned(errors.Invalid("a", "b", changed=[])).body() == {"ok": False, "errors": ["a", "b"],
                                                                          "changed": []}
    full = fileio.WriteFailed(errno.ENOSPC, "No space left on device", "/data/x")
    assert answer(full)[0] == 507
    assert answer(fileio.Unreadable("config/x.json is not valid JSON"))[0] == 400
    for exc in (KeyError("members"), LookupError("gone"), ValueError("bad"), RuntimeError("odd")):
        status, message, _ = answer(exc)
        assert status == 500 and re.search(r"; error id [0-9a-f]{8}$", message), exc
        assert f"error {message[-8:]}: the server failed\n" in capfd.readouterr().err

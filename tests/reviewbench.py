"""The Review page's bench (issue 31), shared by test_review.py and test_review_browser.py: five models on the local
upstream whose answers are markdown (one of them hostile HTML), collections of five and of two, a real dashboard on
127.0.0.1, and panels asked through its gateway routes."""

import contextlib
import http.client
import json

from benchwarmers.core import fileio, paths
from benchwarmers.dashboard import serve
from benchwarmers.demo import demo
from benchwarmers.models import catalog

# Answers name no model, so a page that hides the names (blind mode) can be checked by its text.
HOSTILE = ('Careful here.\n\n<script>window.pwned = "script"</script>\n\n<img src="x" onerror="window.pwned = \'img\'">\n\n'
           '<a href="javascript:window.pwned=1">a link</a> and **bold** text.')
MODELS = {
    "alpha": {"answer": "The loop skips the **first** item:\n\n```python\nfor i in range(1, n):\n    use(i)\n```\n",
              "latency": 0.01, "context_window": 32000},
    "beta": {"answer": "Looks correct to me.\n\n- the bounds hold\n- the types match\n", "latency": 0.01,
             "context_window": 32000},
    "gamma": {"answer": "Off by one at index zero; see `range(1, n)`.", "latency": 0.01, "context_window": 32000},
    "delta": {"answer": "| case | result |\n|---|---|\n| empty | fails |\n| one | passes |\n", "latency": 0.01,
              "context_window": 32000},
    "rogue": {"answer": HOSTILE, "latency": 0.01, "context_window": 32000},
}
FIVE = ["alpha", "beta", "gamma", "delta", "rogue"]


@contextlib.contextmanager
def dashboard():
    """The local upstream with MODELS, registered; `core` (all five) and `pair` (alpha, beta; shape review) as
    collections; the dashboard on a free port. Yields its port."""
    with demo.Upstream(models={name: dict(spec) for name, spec in MODELS.items()}) as up:
        demo.register(up)
        fileio.write_atomic(paths.file("config", "gateway.json"), '{"max_calls": 5, "max_explorers": 0}\n')
        catalog.warm(refresh=True)
        demo.set_collection("core", FIVE, description="five reviewers", tags=["review"])
        demo.set_collection("pair", ["alpha", "beta"], description="two reviewers", tags=["review"], shape="review")
        srv = serve.serve("127.0.0.1", 0)
        try:
            yield srv.server_address[1]
        finally:
            srv.shutdown()
            srv.server_close()


def call(port, method, path, body=None):
    """`(status, parsed JSON body)` from the dashboard on `port`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Host": f"127.0.0.1:{port}", "Content-Type": "application/json"})
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    return resp.status, json.loads(raw)


def ask(port, collection, prompt):
    """One panel through the dashboard's gateway route; its `bench` field."""
    status, reply = call(port, "POST", "/v1/chat/completions",
                         {"model": f"bench/{collection}", "messages": [{"role": "user", "content": prompt}]})
    assert status == 200, reply
    return reply["bench"]

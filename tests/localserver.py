"""What every fake server the tests start shares: its own port on 127.0.0.1, served on a daemon thread for the
length of a `with` block."""

import threading
from http.server import ThreadingHTTPServer


class LocalServer:
    """Subclasses call `listen(handler_class)` in `__init__`; `with` serves it and shuts it down after."""

    def listen(self, handler):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

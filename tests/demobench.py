"""The demo bench the documentation's tests use: `bench demo` as a newcomer starts it (the dashboard and the
gateway on one port, on the shipped demo upstream and a throwaway data folder), in its own process on a free
port, so the snippets and pictures are of the real product."""

import contextlib
import dataclasses
import re
import subprocess
import sys
import threading

BANNER = re.compile(r"Benchwarmers on http://localhost:(\d+)")
FOLDER = re.compile(r"Data folder \(thrown away when this stops\): (\S+)")


@dataclasses.dataclass(frozen=True)
class Demo:
    port: int
    home: str

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def running_demo():
    """The demo on a free port until the block ends; its data folder goes with it."""
    child = subprocess.Popen([sys.executable, "-m", "benchwarmers.dashboard.serve", "--demo", "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = home = None
        for line in child.stdout:
            port = port or (BANNER.search(line) and int(BANNER.search(line).group(1)))
            home = home or (FOLDER.search(line) and FOLDER.search(line).group(1))
            if port and home:
                break
        assert port and home, "the demo stopped before saying its port and data folder"
        # whatever it prints later is read and dropped, so a full pipe never stalls it
        threading.Thread(target=child.stdout.read, daemon=True).start()
        yield Demo(port, home)
    finally:
        child.terminate()
        child.wait(30)

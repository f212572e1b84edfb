"""A throwaway Postgres cluster for the tests (docs/replicas.md): Debian's `postgresql` binaries, `initdb` into a
folder under /tmp, `pg_ctl` listening on 127.0.0.1 at a free port, stopped and deleted at the end.

Postgres refuses to run as root, so as root the cluster belongs to the user `benchpg` (made when missing) and
every binary runs through `runuser`. What cannot be done is raised as `Unavailable`, saying what is missing:
the fixtures fail with it, never skip (a store nobody tested is no store).
"""

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")
USER = "benchpg"
DATABASE = "bench"
MISSING = ("no Postgres server binaries at {} (Debian: `apt-get install -y postgresql`; .ci/run installs it)")
# the cluster is thrown away: nothing it writes needs to survive a crash, so it skips the disk flushes
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"


class Unavailable(RuntimeError):
    """No server could be started; the message says why."""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self):
        if not (BIN / "initdb").exists():
            raise Unavailable(MISSING.format(BIN))
        self.root = Path(tempfile.mkdtemp(prefix="bench-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.url = f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"
        self.owner = USER if os.geteuid() == 0 else ""

    def _run(self, *command):
        prefix = ["runuser", "-u", self.owner, "--"] if self.owner else []
        done = subprocess.run(prefix + [str(c) for c in command], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise Unavailable(f"{Path(str(command[0])).name} failed: {(done.stderr or done.stdout).strip()[-800:]}")
        return done

    def start(self):
        if self.owner:
            if subprocess.run(["id", "-u", USER], capture_output=True).returncode:
                subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                               check=True, capture_output=True)
            shutil.chown(self.root, USER)
        self._run(BIN / "initdb", "-D", self.data, "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        self.resume()
        self._run(BIN / "createdb", "-h", "127.0.0.1", "-p", self.port, "-U", USER, DATABASE)
        return self

    def resume(self):
        """Start the server on its port, with what it held when it was halted."""
        self._run(BIN / "pg_ctl", "-D", self.data, "-l", self.root / "server.log", "-w", "-t", "60", "-o",
                  f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 {FAST}", "start")

    def halt(self):
        """Stop the server at once, its connections cut as a crash cuts them; `resume` starts it again. What was
        committed is written out first, as a server that flushes its commits would have it (this one does not:
        FAST), so a commit made a moment before is still there after the crash, as the tests expect."""
        if (self.data / "postmaster.pid").exists():
            try:
                self._run(BIN / "psql", "-h", "127.0.0.1", "-p", self.port, "-U", USER, "-d", DATABASE, "-c",
                          "CHECKPOINT")
            except Unavailable:
                pass  # a server that does not answer is stopped all the same
            self._run(BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")

    def stop(self):
        self.halt()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()

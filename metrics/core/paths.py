"""Where an install keeps its state: the data folder (PATH-1..6, DATA-1..5) and llm's user folder (KEY-1).

The data folder is resolved in order: env `BENCHWARMERS_HOME`, the pointer file
`.benchwarmers-home` at the top of the checkout, then the checkout itself. The
reference fixes it once at import; here `data()` re-resolves whenever the env
value changes and `reload()` forces it (models.md improvement 12), so tests may
set `BENCHWARMERS_HOME` at any time, in any import order.

Every module asks this one for its paths: `paths.file("config", "gateway.json")`.

    python -m benchwarmers.core.paths      prints `<folder>  (<why>)`
"""

import argparse
import errno
import os
import shlex
import shutil
import stat
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from . import fileio, settings

PACKAGE = Path(__file__).resolve().parent.parent  # `metrics/` in a checkout, `benchwarmers/` in an install
# Where the shipped files (config/, ui/, suite/starter/) are: the checkout's top, or the installed package itself,
# which carries them as package data. The same relative paths hold in both.
CODE = PACKAGE if (PACKAGE / "ui").is_dir() else PACKAGE.parent
IN_CHECKOUT = CODE != PACKAGE
SHIPPED = CODE / "config"
POINTER = CODE / ".benchwarmers-home"
INSTALLED_NAME = "benchwarmers"  # the import name of an install, editable or not (pyproject.toml)
LAYOUT = ("config", "metrics", "perf", "runs", "suite/tasks")

REASON_ENV = "BENCHWARMERS_HOME"
REASON_POINTER = ".benchwarmers-home"
REASON_CHECKOUT = "the checkout (no BENCHWARMERS_HOME or .benchwarmers-home)"
REASON_INSTALLED = "the per-user folder (an installed package, no BENCHWARMERS_HOME)"

_lock = threading.Lock()
_cached: tuple[tuple[str, int | None], Path, str] | None = None  # ((env value, pointer mtime), folder, reason)
_made: set[Path] = set()
FILES_KEPT = 512
# (folder, parts) -> Path: the request path asks for the same few files hundreds of times a panel
_files: dict[tuple[Path, tuple[str, ...]], Path] = {}


def _pointer_state() -> int | None:
    try:
        return POINTER.stat().st_mtime_ns
    except OSError:
        return None


def resolve() -> tuple[Path, str]:
    """Work the data folder out afresh: `(folder, reason)`. Reads env and the pointer file."""
    env = settings.env("BENCHWARMERS_HOME").strip()
    if env:
        return Path(os.path.expanduser(env)), REASON_ENV
    try:
        pointed = POINTER.read_text(encoding="utf-8").strip()
    except OSError:
        pointed = ""
    if pointed:
        return Path(os.path.expanduser(pointed)), REASON_POINTER
    # an installed package never keeps data beside its code (DATA-4)
    return (CODE, REASON_CHECKOUT) if IN_CHECKOUT else (default_home(), REASON_INSTALLED)


def located() -> tuple[Path, str]:
    """`(folder, reason)`, cached until the env value or the pointer file changes."""
    global _cached
    env = settings.env("BENCHWARMERS_HOME")
    # env wins over the pointer, so while it is set the pointer is not even stat'ed (every paths.file() asks)
    key = (env, None if env.strip() else _pointer_state())
    cached = _cached
    if cached is None or cached[0] != key:
        folder, reason = resolve()
        cached = _cached = (key, folder, reason)
    return cached[1], cached[2]


def reload() -> None:
    """Forget the cached answer; the next call resolves again."""
    global _cached
    _cached = None
    _made.clear()
    _files.clear()


def data() -> Path:
    """The data folder, its layout made and shipped defaults copied on first use."""
    folder = located()[0]
    if folder not in _made:
        with _lock:
            if folder not in _made:
                make(folder)
                _made.add(folder)
    return folder


def file(*parts: str) -> Path:
    """A path inside the data folder: `file("runs", "gateway", "calls.jsonl")`."""
    folder = data()
    key = (folder, parts)
    found = _files.get(key)
    if found is None:
        if len(_files) >= FILES_KEPT:
            _files.clear()
        found = _files[key] = folder.joinpath(*parts)
    return found


_named: dict[tuple[str, int], dict[str, str]] = {}  # (folder, id of a layout) -> {name: path string}


def named_files(folder: str, layout: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """`{name: path string}` for `layout` (`{name: parts inside the data folder}`, a module's constant) in
    `folder`, made once per folder and layout, so a hot path finds its files by name without making Paths."""
    key = (folder, id(layout))
    found = _named.get(key)
    if found is None:
        found = _named[key] = {name: os.path.join(folder, *parts) for name, parts in layout.items()}
    return found


def make(folder: str | os.PathLike[str]) -> int:
    """Create the layout (DATA-2) and copy shipped defaults that are missing (never overwrite).

    A folder made here is its owner's alone (0700), and so is every copy (0600): the data folder holds
    prompts, answers and the gateway keys' hashes (PATH-7). Returns how many files were copied.
    """
    folder = Path(folder)
    for part in LAYOUT:
        fileio.make_folder(folder / part)
    if folder.resolve() == CODE:
        return 0  # the checkout already holds config/ itself
    copied = 0
    if SHIPPED.is_dir():
        for source in sorted(SHIPPED.rglob("*")):
            if not source.is_file():
                continue
            target = folder / "config" / source.relative_to(SHIPPED)
            if target.exists():
                continue
            fileio.make_folder(target.parent)
            try:
                # "x" mode: another process copying at the same moment cannot be overwritten
                with open(source, "rb") as src, open(target, "xb", opener=fileio.opener) as dst:
                    shutil.copyfileobj(src, dst)
                copied += 1
            except FileExistsError:
                pass
    return copied


NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def unwritable(exc: OSError) -> tuple[int, str]:
    """`(status, message)` for a write the data folder refused (nothing-lost item 3): 507 when it is
    out of space or past a file-size limit, 503 for anything else (read-only, permissions)."""
    status = 507 if exc.errno in NO_SPACE else 503
    cause = f"[Errno {exc.errno}] {exc.strerror}" if exc.errno else str(exc)
    where = f" ({exc.filename})" if exc.filename else ""
    return status, f"the data folder {located()[0]} could not be written{where}: {cause}"


def write_problem() -> str:
    """Why the data folder cannot take writes now, or "" (for `/health`, which anyone may ask, so no
    path is named): a file whose last write failed, a folder this process may not write, or a full disk."""
    folder = located()[0]
    failed = fileio.write_failure(folder)
    if failed:
        return failed
    try:
        if not os.access(folder, os.W_OK):
            return "the folder is not writable by this process"
        if os.statvfs(folder).f_bavail == 0:
            return f"[Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}"
    except (OSError, AttributeError):  # a folder not made yet, or no statvfs (Windows)
        pass
    return ""


def exposure() -> str:
    """Why other users of this machine can reach into the data folder, as a warning naming the fix, or ""
    (PATH-7, issue 29 item 4): a folder made before it was made 0700, or one the user opened, keeps its mode."""
    folder = located()[0]
    try:
        mode = stat.S_IMODE(os.stat(folder).st_mode)
    except OSError:
        return ""  # not made yet: it will be made 0700
    if os.name != "posix" or not mode & 0o077:
        return ""
    return (f"the data folder {folder} is open to other users of this machine (mode {mode:04o}), and it holds "
            f"prompts, answers and the call log; make it yours alone with: chmod 700 {shlex.quote(str(folder))}")


def default_home() -> Path:
    """The per-user folder an installed command uses when no BENCHWARMERS_HOME is set (PATH-3, DATA-4)."""
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return Path(base) / "benchwarmers" if base else home / "benchwarmers"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "benchwarmers"
    base = os.environ.get("XDG_DATA_HOME")
    return Path(base) / "benchwarmers" if base else home / ".local" / "share" / "benchwarmers"


def llm_dir() -> Path:
    """llm's user folder (KEY-1): `LLM_USER_PATH`, else the OS's config folder for io.datasette.llm."""
    env = os.environ.get("LLM_USER_PATH")
    if env:
        return Path(env)
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("APPDATA")
        return (Path(base) if base else home) / "io.datasette.llm"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "io.datasette.llm"
    base = os.environ.get("XDG_CONFIG_HOME")
    return (Path(base) if base else home / ".config") / "io.datasette.llm"


def child_python() -> str:
    """SU-34: the checkout's virtualenv when there is one, else this interpreter."""
    for candidate in (CODE / ".venv" / "Scripts" / "python.exe", CODE / ".venv" / "bin" / "python"):
        if candidate.exists():
            return str(candidate)
    return sys.executable


def module_command(module: str, *args: object, python: str | None = None) -> list[str]:
    """The argv that runs one of the package's modules (`"scripts.onboard"`, `"perf.run"`) as a child:
    always `python -m benchwarmers.<module>`, never a file path, so the child finds the package the same way
    from an install and from a checkout installed with `pip install -e .`."""
    return [python or sys.executable, "-m", f"{INSTALLED_NAME}.{module}", *map(str, args)]


LAUNCHER_DEFAULT = "BENCHWARMERS_HOME_DEFAULTED"  # set by the launcher when it chose the folder itself
FIRST_RUN = "BENCHWARMERS_FIRST_RUN"  # set by the launcher for the init it runs before a server's first start


def why(reason: str) -> str:
    """`located()`'s reason as a sentence for a person: which setting chose the folder, or that none did."""
    if reason == REASON_ENV and settings.env(LAUNCHER_DEFAULT) == "1":
        return "the default folder for this user: BENCHWARMERS_HOME is not set"
    return {REASON_ENV: "BENCHWARMERS_HOME names it",
            REASON_POINTER: f"{POINTER} names it (BENCHWARMERS_HOME is not set)",
            REASON_CHECKOUT: "the checkout itself: neither BENCHWARMERS_HOME nor .benchwarmers-home names another",
            REASON_INSTALLED: "the default folder for this user: BENCHWARMERS_HOME is not set",
            }[reason]


def main(argv: Sequence[str] = ()) -> None:
    """`argv`: the words after `python -m benchwarmers.core.paths` (the launcher's `paths` command passes none)."""
    argparse.ArgumentParser(prog="python -m benchwarmers.core.paths",
                            description="Print the data folder and why it was chosen (DATA-1).").parse_args(argv)
    folder, reason = located()
    print(f"{folder}  ({why(reason)})")


if __name__ == "__main__":
    main(sys.argv[1:])

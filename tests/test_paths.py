"""The data folder (PATH-1..6, DATA-1..5) and llm's user folder (KEY-1)."""

import shutil
import subprocess
import sys

import pytest

from benchwarmers.core import paths


def test_path1_env_wins_and_is_stripped_and_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("BENCHWARMERS_HOME", f"  {tmp_path}/x  ")
    assert paths.located() == (tmp_path / "x", "BENCHWARMERS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("BENCHWARMERS_HOME", "~/y")
    assert paths.located()[0] == tmp_path / "y"


def test_path1_pointer_then_checkout(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCHWARMERS_HOME")
    pointer = tmp_path / ".benchwarmers-home"
    monkeypatch.setattr(paths, "POINTER", pointer)
    paths.reload()
    assert paths.located() == (paths.CODE, paths.REASON_CHECKOUT)
    pointer.write_text(f"\n {tmp_path}/pointed \n")
    assert paths.located() == (tmp_path / "pointed", ".benchwarmers-home")
    pointer.write_text("   ")
    assert paths.located()[1] == paths.REASON_CHECKOUT


def test_path1_a_set_env_never_looks_at_the_pointer(monkeypatch, tmp_path):
    """PATH-1: env wins, so while it is set the pointer is not stat'ed on each paths.file() (issue 7)."""

    class Untouchable(type(tmp_path)):
        def stat(self, *args, **kwargs):
            raise AssertionError("the pointer was looked at")

    monkeypatch.setattr(paths, "POINTER", Untouchable(tmp_path / ".benchwarmers-home"))
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "env"))
    paths.reload()
    for _ in range(3):
        assert paths.file("config", "x.json") == tmp_path / "env" / "config" / "x.json"
    monkeypatch.setenv("BENCHWARMERS_HOME", "  ")  # blank counts as unset: then the pointer is consulted
    with pytest.raises(AssertionError, match="pointer was looked at"):
        paths.located()


def test_resolver_follows_env_changes_without_reimport(monkeypatch, tmp_path):
    """models.md improvement 12: no import-order dependence."""
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "a"))
    assert paths.data() == tmp_path / "a"
    monkeypatch.setenv("BENCHWARMERS_HOME", str(tmp_path / "b"))
    assert paths.file("config", "x.json") == tmp_path / "b" / "config" / "x.json"


def test_path4_layout_and_shipped_defaults_copied_never_overwritten(home):
    folder = paths.data()
    for part in paths.LAYOUT:
        assert (folder / part).is_dir()
    gateway = folder / "config" / "gateway.json"
    assert '"max_calls": 5' in gateway.read_text()
    assert (folder / "config" / "model-roles.json").exists()
    gateway.write_text('{"max_calls": 3}\n')
    assert paths.make(folder) == 0
    assert gateway.read_text() == '{"max_calls": 3}\n'


def test_path5_cli_prints_folder_and_reason(home):
    out = subprocess.run([sys.executable, "-m", "benchwarmers.core.paths"], capture_output=True, text=True, check=True)
    assert out.stdout == f"{home}  (BENCHWARMERS_HOME names it)\n"
    out = subprocess.run(paths.module_command("core.paths"), capture_output=True, text=True, check=True, cwd=paths.CODE)
    assert out.stdout.startswith(f"{home}  (")


def test_path3_default_home_is_per_user(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    if sys.platform.startswith("linux"):
        assert paths.default_home() == tmp_path / "benchwarmers"


def test_key1_llm_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "l"))
    assert paths.llm_dir() == tmp_path / "l"
    monkeypatch.delenv("LLM_USER_PATH")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    if sys.platform.startswith("linux"):
        assert paths.llm_dir() == tmp_path / "cfg" / "io.datasette.llm"


def test_launcher_sets_home_for_installed_command(monkeypatch, tmp_path, capfd):
    from benchwarmers.cli import launcher

    monkeypatch.delenv("BENCHWARMERS_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert launcher.main(["paths"]) == 0
    out = capfd.readouterr().out  # `paths` runs as the launcher's child, writing to the same stdout
    if sys.platform.startswith("linux"):
        assert out == f"{tmp_path / 'benchwarmers'}  (the default folder for this user: BENCHWARMERS_HOME is not set)\n"


def test_path1_pointer_expands_home(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCHWARMERS_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    pointer = tmp_path / ".benchwarmers-home"
    pointer.write_text("~/bench-data\n")
    monkeypatch.setattr(paths, "POINTER", pointer)
    assert paths.located() == (tmp_path / "bench-data", ".benchwarmers-home")


@pytest.mark.parametrize("platform, env, data_home, llm_home", [
    ("linux", {}, ".local/share/benchwarmers", ".config/io.datasette.llm"),
    ("linux", {"XDG_DATA_HOME": "xdg-data", "XDG_CONFIG_HOME": "xdg-cfg"}, "xdg-data/benchwarmers",
     "xdg-cfg/io.datasette.llm"),
    ("darwin", {}, "Library/Application Support/benchwarmers", "Library/Application Support/io.datasette.llm"),
    ("win32", {"LOCALAPPDATA": "local", "APPDATA": "roaming"}, "local/benchwarmers", "roaming/io.datasette.llm"),
    ("win32", {}, "benchwarmers", "io.datasette.llm"),
])
def test_path3_data4_key1_per_user_folders_on_each_os(monkeypatch, tmp_path, platform, env, data_home, llm_home):
    """The installed command's data folder and llm's user folder, each spelled in one function."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("LLM_USER_PATH")
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "LOCALAPPDATA", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, str(tmp_path / value))
    monkeypatch.setattr(sys, "platform", platform)
    assert paths.default_home() == tmp_path / data_home
    assert paths.llm_dir() == tmp_path / llm_home


def test_launcher_version_and_help(capsys):
    """LN-2: the version alone; LN-4: `--help` prints the usage (a bare command line runs the dashboard, LN-3)."""
    from benchwarmers import __version__
    from benchwarmers.cli import launcher

    assert launcher.main(["--version"]) == 0 and capsys.readouterr().out == f"{__version__}\n"
    assert launcher.main(["--help"]) == 0 and "Servers:" in capsys.readouterr().out
    installed = shutil.which("bench")
    if installed:
        out = subprocess.run([installed, "--version"], capture_output=True, text=True, check=True)
        assert out.stdout == f"{__version__}\n"

"""The scheduler (suite-cli-mcp.md §4): due times across a week, catch-up, modes, the lock, with an injected clock."""

import datetime
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time

from benchwarmers.core import paths
from benchwarmers.admin import jobs, scheduler
from conftest import wait_for

MONDAY = datetime.date(2026, 10, 12)


def at(days, hhmm):
    return scheduler.local(MONDAY + datetime.timedelta(days=days), hhmm)


def configure(mode, only=None):
    off = {job: False for job in jobs.JOBS if only is not None and job not in only}
    paths.file("config", "scheduler.json").write_text(json.dumps({"mode": mode, "jobs": off}))


class Recorder:
    def __init__(self):
        self.lines, self.started = [], []

    def tick(self, now, state, mode="log-only", only=("availability",), running=()):
        enabled = {job: job in only for job in jobs.JOBS}
        scheduler.tick(now, state, mode, enabled, set(running), lambda job, due: self.started.append((job, due)),
                       self.lines.append)


def test_sch2_due_times_across_a_week():
    assert MONDAY.weekday() == 0
    suite = scheduler.slots("suite")
    assert [d.strftime("%a %H") for d in scheduler.due_between(suite, at(0, "04:00"), at(1, "04:00"))] == \
        ["Mon 09", "Mon 15", "Mon 21", "Tue 03"]
    assert scheduler.next_due(scheduler.slots("perf"), at(0, "04:00")) == at(0, "07:00")
    assert scheduler.next_due(scheduler.slots("perf"), at(0, "08:00")) == at(7, "07:00")
    assert scheduler.next_due(scheduler.slots("capabilities"), at(0, "04:00")) == at(6, "07:00")
    week = {job: len(scheduler.due_between(scheduler.slots(job), at(0, "00:00"), at(7, "00:00"))) for job in jobs.JOBS}
    assert week == {"availability": 7, "catalog": 7, "suite-free": 7, "deprecations": 7, "perf": 1,
                    "capabilities": 1, "suite": 28}
    assert scheduler.due_between(suite, at(0, "09:00"), at(0, "09:00")) == []  # (start, end]: end counts, start not
    assert scheduler.due_between(suite, at(0, "08:59"), at(0, "09:00")) == [at(0, "09:00")]


def test_sch_aware_times_keep_the_wall_clock_across_a_dst_change(monkeypatch):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        start = scheduler.local(datetime.date(2026, 10, 24), "00:00")
        due = scheduler.due_between(scheduler.slots("availability"), start, start + datetime.timedelta(days=2))
        assert [d.strftime("%d %H:%M %z") for d in due] == ["24 05:00 +0200", "25 05:00 +0100"]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_sch8_log_only_once_per_due_time_catch_up_run_and_skipped():
    state, rec = {}, Recorder()
    rec.tick(at(0, "04:00"), state)
    assert rec.lines == [] and scheduler.parse_time(state["availability"]) == at(0, "04:00")
    rec.tick(at(0, "05:01"), state)
    assert rec.lines == ["would run availability (due Mon 05:00): perf.run -n 1 --tiny-only --timeout 90 "
                         "--client builtin"]
    rec.tick(at(0, "05:02"), state)
    assert len(rec.lines) == 1
    rec.tick(at(2, "08:00"), state)  # two slots missed: one catch-up line
    assert len(rec.lines) == 2 and rec.lines[1].startswith("would run availability (due Wed 05:00) (catching up")
    rec.tick(at(3, "05:00"), state, mode="run")
    assert rec.lines[2] == "starting availability (due 05:00)" and rec.started == [("availability", "05:00")]
    rec.tick(at(4, "05:00"), state, mode="run", running={"availability"})
    assert rec.lines[3] == "skipped availability (due 05:00): the previous run is still going"
    assert rec.started == [("availability", "05:00")]
    rec.tick(at(12, "05:00"), state, mode="off")  # SCH-1: off advances nothing
    assert len(rec.lines) == 4 and scheduler.parse_time(state["availability"]) == at(4, "05:00")
    rec.tick(at(30, "06:00"), state)  # a month away: at most 7 days are looked back, still one line
    assert len(rec.lines) == 5 and "(due " + at(30, "05:00").strftime("%a") + " 05:00) (catching up" in rec.lines[4]


def test_sch6_sch3_a_naive_state_entry_reads_as_local_and_every_enabled_job_is_recorded():
    state, rec = {"availability": "2026-10-12T04:00:00"}, Recorder()
    rec.tick(at(0, "05:30"), state, only=tuple(jobs.JOBS))
    assert sorted(state) == sorted(jobs.JOBS) and rec.lines[0].startswith("would run availability (due Mon 05:00)")


def log_text():
    try:
        return paths.file("runs", "scheduler.log").read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def test_sch4_sch5_sch6_the_loop_runs_a_real_job_and_releases_the_lock(home):
    """Run mode with only `availability` on; the clock is injected: the first tick records, the next one is due."""
    configure("run", only={"availability"})
    times = iter([at(0, "04:00")] + [at(0, "05:01")] * 1000)
    loop = scheduler.Scheduler(tick_s=0.05, clock=lambda: next(times))
    thread = threading.Thread(target=loop.loop)
    thread.start()
    try:
        assert wait_for(lambda: "ran availability (due 05:00): exit 0 in" in log_text()), log_text()
    finally:
        loop.stop()
        thread.join(10)
    text = log_text()
    assert text.splitlines()[0].endswith("  scheduler started, mode run, jobs availability")
    assert text.count("starting availability (due 05:00)") == 1  # once per due time
    state = json.loads(paths.file("runs", "scheduler-state.json").read_text())
    assert list(state) == ["availability"] and state["availability"].startswith("2026-10-12T05:00:00")
    assert loop.take_lock()  # stopping released it
    loop.release()


def test_sch4_a_job_whose_program_is_not_installed_is_said_not_run(home, monkeypatch):
    """SCH-4, beyond it: a job naming a program this install lacks (an install older than its job table) is
    said in the log as such (never a failed exit that reads like a broken job), and the loop goes on."""
    monkeypatch.setitem(jobs.JOBS, "nightly", (None, (1,), "a job from a later version", "scripts.not_here --x"))
    assert importlib.util.find_spec("benchwarmers.scripts.not_here") is None
    loop = scheduler.Scheduler(tick_s=0.05)
    loop.run_job("nightly", "01:00")
    assert "skipped nightly (due 01:00): benchwarmers.scripts.not_here is not part of this install" in log_text()
    assert "nightly" not in loop.running


def test_sch5_a_failing_tick_is_logged_and_the_loop_goes_on(home):
    configure("log-only")
    calls = []

    def clock():
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("clock broke")
        return at(0, "04:00")

    loop = scheduler.Scheduler(tick_s=0.02, clock=clock)
    thread = threading.Thread(target=loop.loop)
    thread.start()
    assert wait_for(lambda: paths.file("runs", "scheduler-state.json").exists())
    loop.stop()
    thread.join(10)
    assert "tick failed: ValueError: clock broke" in log_text()


def test_sch7_one_scheduler_per_data_folder_with_two_real_processes(home):
    configure("off")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    command = [sys.executable, "-m", "benchwarmers.admin.scheduler", "--run", "--tick", "0.1"]
    first = subprocess.Popen(command, env=env, cwd=paths.CODE)
    try:
        assert wait_for(lambda: "scheduler started" in log_text())
        second = subprocess.run(command, env=env, cwd=paths.CODE, capture_output=True, text=True, timeout=30)
        assert second.returncode == 0 and second.stdout == "" and second.stderr == ""  # exits silently
        assert log_text().count("scheduler started") == 1
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(10)
    third = subprocess.Popen(command, env=env, cwd=paths.CODE)
    try:
        assert wait_for(lambda: log_text().count("scheduler started") == 2)  # the lock was released
    finally:
        third.send_signal(signal.SIGINT)
        third.wait(10)


def test_sch9_the_table_of_jobs(home):
    configure("log-only", only={"suite"})
    done = subprocess.run([sys.executable, "-m", "benchwarmers.admin.scheduler"], capture_output=True, text=True,
                          cwd=paths.CODE, env={**os.environ, "PYTHONIOENCODING": "utf-8"})
    lines = done.stdout.splitlines()
    assert lines[0] == "mode: log-only  (config/scheduler.json)"
    assert len(lines) == 1 + len(jobs.JOBS)
    assert any(line.split()[:2] == ["on", "suite"] and line.endswith("suite.run --next") for line in lines)
    assert any(line.split()[:2] == ["off", "perf"] and " 07:00  perf.run -n 3" in line for line in lines)


def test_sch4_a_job_over_its_time_limit_is_stopped(home, monkeypatch):
    """SCH-4: a job still running at the limit is stopped and said so. The job is real and never ends (the demo
    upstream serving); the limit is shrunk from 2 h to a second."""
    monkeypatch.setitem(jobs.JOBS, "forever", (None, (1,), "never ends", "demo.demo --port 0"))
    monkeypatch.setattr(scheduler, "RUN_LIMIT_S", 1)
    loop = scheduler.Scheduler(tick_s=0.05)
    started = time.monotonic()
    loop.run_job("forever", "01:00")
    assert time.monotonic() - started < 10
    assert "ran forever (due 01:00): stopped at the 2 h limit" in log_text()
    assert "forever" not in loop.running


def test_sch4_a_job_that_cannot_start_is_said(home, monkeypatch, tmp_path):
    """SCH-4: a checkout whose virtualenv interpreter cannot be run (SU-34 picks it) logs `could not start`."""
    checkout = tmp_path / "checkout"
    broken = checkout / ".venv" / "bin" / "python"
    broken.parent.mkdir(parents=True)
    broken.write_text("not a program\n")  # no execute bit: exec refuses it
    monkeypatch.setattr(paths, "CODE", checkout)
    monkeypatch.setitem(jobs.JOBS, "nightly", (None, (1,), "a job", "scripts.init"))
    loop = scheduler.Scheduler(tick_s=0.05)
    loop.run_job("nightly", "01:00")
    assert "ran nightly (due 01:00): could not start ([Errno 13] Permission denied" in log_text()
    assert "nightly" not in loop.running

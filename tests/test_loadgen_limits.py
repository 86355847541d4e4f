"""A load generator's priority (bench/loadgen/limits.py): nicer than the server, as a process and, where the
kernel groups sessions, as its session."""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing.connection import Connection
from pathlib import Path

from bench.loadgen.limits import AUTOGROUP, lower_priority


def report_priority(niceness: int, out: Connection) -> None:
    """In a session of its own, as a load generator: lower the priority, then say what it is."""
    os.setsid()
    lower_priority(niceness)
    autogroup = AUTOGROUP.read_text() if AUTOGROUP.exists() else None
    out.send((os.nice(0), autogroup))


def priority_after(niceness: int) -> tuple[int, str | None]:
    spawn = multiprocessing.get_context("spawn")
    theirs, ours = spawn.Pipe(duplex=False)
    process = spawn.Process(target=report_priority, args=(niceness, ours))
    process.start()
    ours.close()
    try:
        return theirs.recv()
    finally:
        process.join(10)


def autogroups_in_use() -> bool:
    setting = Path("/proc/sys/kernel/sched_autogroup_enabled")
    return setting.exists() and setting.read_text().strip() == "1"


def test_a_load_generator_is_nicer_and_so_is_its_session() -> None:
    before = os.nice(0)
    niceness, autogroup = priority_after(10)
    assert niceness == min(before + 10, 19)
    if autogroups_in_use():
        assert autogroup is not None and autogroup.rstrip().endswith(" nice 10")


def test_niceness_zero_leaves_the_priority_alone() -> None:
    niceness, autogroup = priority_after(0)
    assert niceness == os.nice(0)
    if autogroups_in_use():
        assert autogroup is not None and autogroup.rstrip().endswith(" nice 0")

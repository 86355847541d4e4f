"""The machine a benchmark ran on, named the same way in every section of docs/benchmarks.md, and the CPU
its processes used."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine_description() -> str:
    """CPU model and core count, Python version: enough to compare runs."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()} ({platform.system()})"


def cpu_seconds(pid: int) -> float:
    """CPU time of process ``pid`` so far, to the nanosecond (``/proc/{pid}/stat`` counts 10 ms ticks)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9

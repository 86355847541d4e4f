"""The machine a benchmark ran on, named the same way in every section of docs/benchmarks.md."""

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

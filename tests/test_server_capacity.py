"""What lets one server process hold many connections and say how busy it is.

The event-loop lag histogram, match gauges counted when ``/metrics`` is read
(not on every start and end), the open-file limit raised to the hard limit, and
full garbage collections made rare (each one stops the loop for most of a second
once there are ten thousand connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import resource
import time

import pytest

from server.limits import (
    GC_THRESHOLDS,
    GC_THRESHOLDS_VARIABLE,
    gc_thresholds,
    raise_open_files_limit,
    tune_garbage_collector,
)
from server.metrics import Metrics, measure_loop_lag


async def test_the_loop_lag_probe_records_how_late_a_blocked_loop_wakes() -> None:
    metrics = Metrics()
    probe = asyncio.create_task(measure_loop_lag(metrics.loop_lag_seconds, interval_s=0.005))
    await asyncio.sleep(0.05)
    time.sleep(0.06)  # block the loop: the probe's next wake-up is at least 55 ms late
    await asyncio.sleep(0.02)
    probe.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await probe

    lag = metrics.loop_lag_seconds
    assert lag.count >= 3
    late = dict(lag.cumulative())
    assert late[0.05] < lag.count  # at least one observation above 50 ms
    text = metrics.render(None)
    assert "# TYPE plyarena_event_loop_lag_seconds histogram" in text
    assert f'plyarena_event_loop_lag_seconds_bucket{{le="+Inf"}} {lag.count}' in text


def test_match_gauges_are_counted_when_rendered() -> None:
    metrics = Metrics()
    assert "plyarena_live_matches 0" in metrics.render(None)
    counts = {"open_matches": 2, "live_matches": 5}
    metrics.match_counts = lambda: counts
    text = metrics.render(None)
    assert "plyarena_live_matches 5" in text and "plyarena_open_matches 2" in text
    counts["live_matches"] = 6
    assert "plyarena_live_matches 6" in metrics.render(None)


def test_the_open_file_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
        raised = raise_open_files_limit()
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == raised
        assert raised == hard or (hard == resource.RLIM_INFINITY and raised >= 256)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_garbage_collector_leaves_startup_objects_alone_and_rarely_collects_everything() -> None:
    thresholds = gc.get_threshold()
    startup_state = [{"a": [1, 2]} for _ in range(100)]
    try:
        tune_garbage_collector()
        assert gc.get_threshold() == GC_THRESHOLDS
        young_per_full = GC_THRESHOLDS[1] * GC_THRESHOLDS[2]  # young collections between two full ones
        assert young_per_full >= 100 * thresholds[1] * thresholds[2]  # far more than by default
        assert gc.get_freeze_count() >= len(startup_state)
        assert not any(
            gc.is_tracked(item) and item in gc.get_objects(generation=2) for item in startup_state[:3]
        )
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_gc_thresholds_can_be_set_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(GC_THRESHOLDS_VARIABLE, raising=False)
    assert gc_thresholds() == GC_THRESHOLDS
    monkeypatch.setenv(GC_THRESHOLDS_VARIABLE, " 5000,10,1000 ")
    assert gc_thresholds() == (5000, 10, 1000)
    for wrong in ("5000,10", "a,b,c", "5000,0,1000"):
        monkeypatch.setenv(GC_THRESHOLDS_VARIABLE, wrong)
        with pytest.raises(ValueError, match=GC_THRESHOLDS_VARIABLE):
            gc_thresholds()

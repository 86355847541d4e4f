"""``plyarena bench server``: the load generator's parts, and whole runs in a tiny configuration.

No timing is asserted (a shared machine makes any figure noisy): the runs check
that every figure of the report is there, and the parts check the arithmetic.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import random
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from bench.loadgen.driver import split
from bench.loadgen.recording import Pacing
from bench.loadgen.report import (
    Memory,
    ServerBenchReport,
    Spread,
    WindowResult,
    histogram_quantile,
    percentile,
    render_markdown,
)
from bench.loadgen.run import ServerBenchPlan, report_notes
from bench.loadgen.target import parse_metrics, waiting_seconds
from plyarena.cli import main

METRICS = """# HELP plyarena_connections Open WebSocket connections.
# TYPE plyarena_connections gauge
plyarena_connections 20
plyarena_errors_total{code="rate_limited"} 3
plyarena_event_loop_lag_seconds_bucket{le="0.001"} 50
plyarena_event_loop_lag_seconds_bucket{le="0.01"} 90
plyarena_event_loop_lag_seconds_bucket{le="+Inf"} 100
plyarena_event_loop_lag_seconds_sum 0.5
"""


def test_metrics_are_read_as_prometheus_text() -> None:
    scrape = parse_metrics(METRICS, at=12.5)
    assert scrape.get("plyarena_connections") == 20
    assert scrape.get('plyarena_errors_total{code="rate_limited"}') == 3
    assert scrape.get("plyarena_missing") == 0
    assert scrape.buckets("plyarena_event_loop_lag_seconds") == [(0.001, 50), (0.01, 90), (math.inf, 100)]


def test_histogram_quantiles_interpolate_within_a_bucket_as_prometheus_does() -> None:
    buckets = [(0.001, 50.0), (0.01, 90.0), (math.inf, 100.0)]
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.001)
    assert histogram_quantile(0.7, buckets) == pytest.approx(0.001 + 0.009 * 20 / 40)
    assert histogram_quantile(0.99, buckets) == math.inf  # past the last finite bound: off scale
    assert math.isnan(histogram_quantile(0.5, [(0.001, 0.0), (math.inf, 0.0)]))


def test_percentiles_are_nearest_rank() -> None:
    samples = [float(value) for value in range(1, 101)]
    assert [percentile(samples, q) for q in (50, 95, 99, 100)] == [50, 95, 99, 100]
    spread = Spread.of(reversed(samples))
    assert (spread.count, spread.p50, spread.max) == (100, 50, 100)
    assert math.isnan(Spread.of([]).p99)


def test_work_is_split_evenly_among_processes() -> None:
    assert split(5, 2) == [3, 2]
    assert split(10_000, 3) == [3334, 3333, 3333]
    assert sum(split(7, 4)) == 7


def test_a_plan_refuses_what_cannot_run_and_says_why() -> None:
    with pytest.raises(ValueError, match="--clients 10 is not enough"):
        ServerBenchPlan(clients=10, matches=6)
    with pytest.raises(ValueError, match="unknown mode 'robots'"):
        ServerBenchPlan(mode="robots")
    with pytest.raises(ValueError, match="duration must be positive"):
        ServerBenchPlan(duration_s=0)
    plan = ServerBenchPlan(clients=20, matches=10, duration_s=4)
    paced, flat_out = plan.windows(start=100.0)
    assert (paced.name, paced.interval_s, paced.start, paced.measured_s) == ("paced", 1.0, 100.0, 4.0)
    assert flat_out.start == paced.end and flat_out.interval_s < paced.interval_s
    assert [window.name for window in replace(plan, mode="bots").windows(0.0)] == ["bots"]
    with pytest.raises(ValueError, match="rate must be positive, not -5"):
        ServerBenchPlan(rates=(100, -5))
    with pytest.raises(ValueError, match="niceness is from 0 to 19, not 20"):
        ServerBenchPlan(loadgen_niceness=20)


def test_several_rates_make_one_paced_window_each_in_order() -> None:
    plan = ServerBenchPlan(clients=20, matches=10, duration_s=4, rates=(5, 20))
    slow, fast, flat_out = plan.windows(start=0.0)
    assert (slow.name, slow.interval_s) == ("paced 5/s", 2.0)
    assert (fast.name, fast.interval_s) == ("paced 20/s", 0.5)
    assert slow.end == fast.start and fast.end == flat_out.start and flat_out.name == "flat-out"


async def test_pacing_spreads_the_matches_and_keeps_the_rate() -> None:
    pacing, fired = Pacing(), []
    beats = [pacing.new_beat() for _ in range(20)]

    def fire(index: int) -> None:
        fired.append((index, beats[index].due))
        pacing.request(beats[index], lambda: fire(index))

    for index, beat in enumerate(beats):
        pacing.request(beat, lambda index=index: fire(index))
    await asyncio.sleep(0.05)
    assert fired == []  # stopped: moves wait for a pace
    before = asyncio.get_running_loop().time()
    pacing.set_interval(0.1, random.Random(1))
    after = asyncio.get_running_loop().time()  # (asyncio's clock runs on while set_interval reads it)
    first_dues = [beat.due for beat in beats]
    await asyncio.sleep(0.5)
    pacing.set_interval(None, random.Random(1))
    count = len(fired)
    await asyncio.sleep(0.15)

    assert len(fired) == count  # stopped again
    assert all(before <= due <= after + 0.1 for due in first_dues)
    assert max(first_dues) - min(first_dues) > 0.05  # spread over one interval, not a burst
    assert 20 <= count <= 20 * 7  # each match at most once per 0.1 s (plus its first move)
    for index in range(20):
        dues = [due for beat, due in fired if beat == index]
        assert all(later - earlier >= 0.1 - 1e-9 for earlier, later in itertools.pairwise(dues))


def window(name: str, moves_per_s: float | None) -> WindowResult:
    return WindowResult(
        name=name, interval_s=1.0, asked_per_s=10.0, seconds=3.0,
        round_trips_ms=Spread(30, 2.0, 4.0, 5.0, 6.0), answered_per_s=10.0, durable_moves_per_s=moves_per_s,
        errors={}, games_ended=1, connections=20, live_matches=10, server_lag_ms=(0.5, 1.5),
        commits_per_s=5.0, writes_per_commit=2.0, commit_p99_ms=3.0, server_cpu=0.1, helpers_cpu=0.02,
        loadgen_cpu=0.1, other_cpu=0.0, loadgen_lag_p99_ms=1.0,
    )  # fmt: skip


def report(date: str) -> ServerBenchReport:
    return ServerBenchReport(
        command="plyarena bench server --clients 20", date=date, machine="2 cores", mode="scripted",
        backend="sqlite", game="connect4", time_control="5+3", clients=20, matches=10, processes=2,
        loadgen_niceness=10,
        connections_held=20, connect_seconds=0.5, live_at_start=10, server_memory=Memory(100, 2148, 20),
        echo_memory=Memory(100, 1124, 20), windows=(window("paced", 10.0), window("flat-out", 40.0)),
        echo=window("echo", None),
    )  # fmt: skip


def test_the_windows_show_what_one_move_or_echo_costs_the_server() -> None:
    text = render_markdown(report("2026-01-01 10:00 UTC"))
    # 0.1 cores over 10 echoes/s, 10 moves/s and 40 moves/s
    assert "| server CPU per durable move (echo: per echo), us | 10,000 | 10,000 | 2,500 |" in text


def test_the_windows_show_how_long_the_server_waited_for_a_core_where_the_kernel_counts_it() -> None:
    waited = replace(
        report("2026-01-01 10:00 UTC"), windows=(replace(window("paced", 10.0), server_waiting=0.15),)
    )
    assert "| server ready but waiting for a core | - | 0.15 |" in render_markdown(waited)
    mine = waiting_seconds(os.getpid())
    if sys.platform == "linux":
        assert mine is not None and mine >= 0.0
    assert waiting_seconds(2**22 + 1) is None  # (above Linux's largest pid: no such process)


def test_the_section_shows_every_paced_window_side_by_side() -> None:
    several = replace(
        report("2026-01-01 10:00 UTC"),
        windows=(window("paced 5/s", 5.0), window("paced 10/s", 10.0), window("flat-out", 40.0)),
    )
    text = render_markdown(several)
    assert "|  | echo | paced 5/s | paced 10/s | flat-out |" in text
    assert "| round trip p50 / p95 / p99 / max ms | 2.0 / 4.0 / 5.0 / 6.0 | 2.0 / 4.0 / 5.0 / 6.0 |" in text
    assert "| durable moves/s | - | 5.0 | 10 | 40 |" in text


def test_a_run_writes_its_own_figures_only_and_says_how_the_reference_ran() -> None:
    text = render_markdown(report("2026-01-02 10:00 UTC"))
    assert text.count("- Command: ") == 1 and "- Date: 2026-01-02 10:00 UTC" in text
    assert "2026-01-01" not in text and "Every run" not in text  # (earlier runs live in git's history)
    assert "| durable moves/s (best window) | 5,000 | 40 | **missed** |" in text
    assert "- The reference of the ratio: in the same run, before the server, the same load" in text
    assert "each connection at most once every 1000 ms" in text  # the echo window's pace
    assert "ratio **4.00**" in text and "| durable moves/s over echoes/s | >= 0.5 | 4.00 | met |" in text
    assert report("x").echo_ratio == 4.0  # best durable moves/s over echoes/s
    assert report("x").server_memory.per_connection_kib == pytest.approx(0.1)


SECTION_FIELDS = (
    "- Date: ",
    "- The reference of the ratio: ",
    "### Targets",
    "connections held",
    "live matches",
    "durable moves/s",
    "move round trip p99",
    "durable moves/s over echoes/s",
    "round trip p50 / p95 / p99 / max ms",
    "server loop lag p50 / p99 ms",
    "server CPU per durable move (echo: per echo), us",
    "server ready but waiting for a core",
    "KiB per connection",
    "websockets echo",
    "- Machine: ",
)


def run_bench(tmp_path: Path, *options: str) -> str:
    output = tmp_path / "benchmarks.md"
    output.write_text("# Benchmarks\n\n<!-- plyarena bench engine: start -->\nengine figures\n"
                      "<!-- plyarena bench engine: end -->\n")  # fmt: skip
    assert main(["bench", "server", *options, "--output", str(output)]) == 0
    text = output.read_text()
    assert "engine figures" in text  # another mode's section is left alone
    return text.split("<!-- plyarena bench server: start -->", 1)[1].split("<!-- plyarena bench server: end")[
        0
    ]


def test_a_tiny_scripted_run_reports_every_figure(tmp_path: Path) -> None:
    section = run_bench(tmp_path, "--clients", "20", "--matches", "10", "--duration", "2", "--rate", "5",
                        "--rate", "10")  # fmt: skip
    for field in (*SECTION_FIELDS, "| echo | paced 5/s | paced 10/s | flat-out |"):
        assert field in section, field
    command = "plyarena bench server --clients 20 --matches 10 --duration 2 --mode scripted"
    assert f"`{command} --rate 5 --rate 10`" in section
    assert "2 load-generator processes at nice 10 (the servers at 0)." in section
    assert section.count("- Command: ") == 1  # this run only
    assert "| connections held | 10,000 | 20 |" in section


def test_a_tiny_run_of_level_one_bots_reports_every_figure(tmp_path: Path) -> None:
    section = run_bench(tmp_path, "--clients", "6", "--matches", "2", "--duration", "1", "--mode", "bots",
                        "--loadgen-nice", "0")  # fmt: skip
    for field in (*SECTION_FIELDS, "| echo | bots |"):
        assert field in section, field
    assert "--mode bots --loadgen-nice 0`" in section
    assert "2 load-generator processes at the servers' priority." in section
    assert "| connections held | 10,000 | 6 |" in section


def test_a_window_held_back_by_its_load_generators_says_so() -> None:
    plan = ServerBenchPlan(clients=20, matches=10, duration_s=1.0, mode="bots")
    bots = replace(window("bots", 8.0), asked_per_s=None, server_cpu=0.38, loadgen_cpu=1.57)
    saturated = replace(window("flat-out", 40.0), asked_per_s=300.0, answered_per_s=40.0, server_cpu=0.95)
    paced = replace(window("paced", 10.0), server_cpu=0.3, loadgen_cpu=0.6)  # got what it asked for
    notes = report_notes(plan, (bots, saturated, paced))
    assert notes == (
        "In the bots window the server used 0.38 of a core and the load generators 1.57: they, not the "
        "server, set the pace, so its moves/s and round trips measure them.",
    )

"""``plyarena bench broker`` and ``commits``, quick: the figures docs/scaling.md is worked out from."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_scratch import temporary_postgres_database
from support.services import mosquitto_binary

from plyarena.cli import main


def table_rows(text: str) -> list[list[str]]:
    """The rows of the section's table, below its header, each a list of its cells."""
    rows = [line.strip("|").split("|") for line in text.splitlines() if re.match(r"\| [0-9]", line)]
    return [[cell.strip().replace(",", "") for cell in row] for row in rows]


def test_quick_broker_benchmark_publishes_from_each_count_of_instances(tmp_path: Path) -> None:
    mosquitto_binary()  # (skips, or fails in CI, without one)
    output = tmp_path / "benchmarks.md"
    assert main(["bench", "broker", "--quick", "--output", str(output)]) == 0
    text = output.read_text()
    assert "`plyarena bench broker --quick`" in text and "mosquitto version" in text
    rows = table_rows(text)
    assert [row[0] for row in rows] == ["2"]
    for instances, published, delivered, broker_cores, broker_us, instance_us, dropped in rows:
        assert float(published) > 0 and 0 <= float(delivered) <= float(published), instances
        assert (
            float(broker_cores) >= 0 and float(broker_us) >= 0 and float(instance_us) > 0 and dropped == "0"
        )


@pytest.fixture
def scratch_database(postgres_url: str) -> Iterator[str]:
    with temporary_postgres_database(postgres_url, "commits") as url:
        yield url


def test_quick_commits_benchmark_groups_the_moves_of_matches_moving_at_once(
    scratch_database: str, tmp_path: Path
) -> None:
    output = tmp_path / "benchmarks.md"
    assert main(["bench", "commits", "--quick", "--db", scratch_database, "--output", str(output)]) == 0
    text = output.read_text()
    assert "`plyarena bench commits --quick --db postgresql+asyncpg://" in text
    rows = table_rows(text)
    assert [row[0] for row in rows] == ["10", "50"]
    for matches, moves_per_s, transactions_per_s, per_transaction, *_ in rows:
        assert float(moves_per_s) > 0 and float(transactions_per_s) > 0
        assert 1 <= float(per_transaction) <= int(matches), "every move waits for its commit"


def test_the_commits_benchmark_names_a_database_it_cannot_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"sqlite+aiosqlite:///{tmp_path / 'no' / 'such' / 'dir.sqlite3'}"
    assert main(["bench", "commits", "--quick", "--db", missing]) != 0
    assert "plyarena bench commits: error: cannot open the database" in capsys.readouterr().err

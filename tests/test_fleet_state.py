"""A fleet's state file (bots/fleet_state.py): the tokens that bring a restarted fleet back as the same bots.

What a restarted fleet does with it, over real sockets, is in tests/test_bots_e2e.py.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

import pytest

from bots.client import BotSpec
from bots.fleet_state import FleetState, FleetStateError
from bots.levels import LEVEL_COUNT, level_table
from plyarena.cli import main
from plyarena.commands.run import default_fleet_state

C4 = "ws://arena-1:8765/ws"
OTHELLO = "ws://arena-2:8765/ws"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_tokens_round_trip_by_server_and_bot_name(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    state = FleetState.open(path)
    assert path.exists() and list(state.identities()) == []
    assert state.remember(C4, "alphabeta-c4-L3", "token-a")
    assert state.remember(C4, "alphabeta-c4-L5", "token-b")
    assert state.remember(OTHELLO, "alphabeta-c4-L3", "token-c")  # the same bot on another server

    again = FleetState.open(path)
    assert sorted(again.identities()) == [
        (C4, "alphabeta-c4-L3", "token-a"),
        (C4, "alphabeta-c4-L5", "token-b"),
        (OTHELLO, "alphabeta-c4-L3", "token-c"),
    ]
    assert again.token(C4, "alphabeta-c4-L5") == "token-b" and again.token(C4, "nobody") is None
    assert json.loads(path.read_text())["version"] == 1


def test_the_file_is_written_when_a_token_changes_and_not_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    state = FleetState.open(path)
    state.remember(C4, "alphabeta-c4-L3", "token-a")
    written = path.stat().st_ino  # each write replaces the file: a new inode

    assert not state.remember(C4, "alphabeta-c4-L3", "token-a")
    assert path.stat().st_ino == written
    assert state.remember(C4, "alphabeta-c4-L3", "token-new")  # a refused token, a new player
    assert path.stat().st_ino != written
    assert FleetState.load(path).token(C4, "alphabeta-c4-L3") == "token-new"


def test_the_file_is_for_its_owner_only_even_where_it_was_not(tmp_path: Path) -> None:
    path = tmp_path / "fleet.json"
    FleetState.open(path).remember(C4, "alphabeta-c4-L3", "secret")
    assert mode(path) == 0o600
    path.chmod(0o644)
    FleetState.open(path)
    assert mode(path) == 0o600


def test_a_failed_write_leaves_the_old_file_whole_and_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "fleet.json"
    state = FleetState.open(path)
    state.remember(C4, "alphabeta-c4-L3", "token-a")
    before = path.read_bytes()

    def full_disk(source: str, target: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(FleetStateError, match=f"cannot write fleet state {path}: No space left on device"):
        state.remember(C4, "alphabeta-c4-L3", "token-b")
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["fleet.json"], "the temporary file is removed"

    monkeypatch.undo()
    assert state.remember(C4, "alphabeta-c4-L3", "token-b"), "the unsaved token is written at the next try"
    assert FleetState.load(path).token(C4, "alphabeta-c4-L3") == "token-b"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "Input data was truncated"),
        ('{"version": 1, "tokens": {', "truncated"),
        ("[1, 2]", "Expected `object`, got `array`"),
        ('{"version": 1, "tokens": {"ws://a/ws": {"bot": 7}}}', "Expected `str`, got `int`"),
        ('{"tokens": {}}', "missing required field `version`"),
    ],
)
def test_a_corrupt_file_is_refused_naming_it_and_why(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "fleet.json"
    path.write_text(content)
    with pytest.raises(FleetStateError) as refused:
        FleetState.open(path)
    message = str(refused.value)
    assert message.startswith(f"{path} is not a fleet state file (") and reason in message
    assert path.read_text() == content, "a file it cannot read is left as it was"


def test_a_file_of_another_version_or_that_cannot_be_read_or_written_is_refused(tmp_path: Path) -> None:
    newer = tmp_path / "newer.json"
    newer.write_text('{"version": 2, "tokens": {}}')
    with pytest.raises(FleetStateError, match="of version 2; this fleet reads version 1"):
        FleetState.open(newer)
    with pytest.raises(FleetStateError, match=f"cannot read fleet state {tmp_path}: Is a directory"):
        FleetState.open(tmp_path)
    missing = tmp_path / "missing" / "fleet.json"
    with pytest.raises(FleetStateError, match=f"cannot write fleet state {missing}: No such file"):
        FleetState.open(missing)


def refusal(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``plyarena ARGV`` refuses to start with (status 1, no traceback)."""
    assert main(list(argv)) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


def test_the_commands_refuse_a_bad_state_file_in_one_line_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("not json")
    line = refusal(["bots", "--state", str(corrupt)], capsys)
    assert line.startswith(f"plyarena bots: error: {corrupt} is not a fleet state file")
    missing = tmp_path / "missing" / "fleet.json"
    line = refusal(["bots", "--state", str(missing)], capsys)
    assert line == f"plyarena bots: error: cannot write fleet state {missing}: No such file or directory"

    # plyarena run reads the one beside its database by default, before the server starts.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLYARENA_DB", raising=False)
    Path("plyarena.fleet.json").write_text("{}")
    line = refusal(["run", "--port", "0"], capsys)
    assert line.startswith("plyarena run: error: plyarena.fleet.json is not a fleet state file")
    assert not Path("plyarena.sqlite3").exists(), "the server was not started"


def test_plyarena_run_keeps_its_fleet_state_beside_its_sqlite_database() -> None:
    assert default_fleet_state(None) == Path("plyarena.fleet.json")  # beside plyarena.sqlite3
    assert default_fleet_state("sqlite:////srv/arena/games.db") == Path("/srv/arena/games.fleet.json")
    assert default_fleet_state("postgresql://arena@db/arena") == Path("plyarena.fleet.json")
    assert default_fleet_state("sqlite+aiosqlite:///:memory:") is None


def test_a_bot_is_found_again_by_the_name_it_says_hello_with() -> None:
    specs = [BotSpec.of(game, number) for game in level_table() for number in range(1, LEVEL_COUNT + 1)]
    assert [BotSpec.named(spec.name) for spec in specs] == specs
    assert BotSpec.named("alphabeta-go-L3") is None

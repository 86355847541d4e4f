"""The ``plyarena`` command line: every command's help renders, and bad input is refused in one line."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from plyarena.cli import build_parser, main
from plyarena.commands.bots import fleet_config
from plyarena.commands.serve import config_from, unreachable_url_warning
from plyarena.options import FLEET_KEY_ENV
from server.config import ServerConfig


def _parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser beneath it, by their command lines."""
    found = {parser.prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found |= _parsers(child)
    return found


PARSERS = _parsers(build_parser())


def test_every_command_is_found() -> None:
    expected = {"plyarena", "plyarena serve", "plyarena run", "plyarena bench", "plyarena bench server"}
    assert expected <= set(PARSERS)


@pytest.mark.parametrize("prog", sorted(PARSERS))
def test_help_renders(prog: str) -> None:
    text = PARSERS[prog].format_help()
    assert text.startswith(f"usage: {prog}")


def test_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "95% intervals" in out  # a percent sign in a command's summary is printed, not formatted
    for prog in PARSERS:
        if prog.count(" ") == 1:
            assert prog.split()[1] in out


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (["serve", "--port", "70000"], "argument --port: 70000 is not a port"),
        (["serve", "--db", "nonsense"], "argument --db: malformed database URL 'nonsense'"),
        (["serve", "--db", "mysql://db/arena"], "argument --db: unsupported database URL"),
        (["serve", "--mqtt", "nonsense"], "argument --mqtt: unsupported MQTT URL 'nonsense'"),
        (["serve", "--public-url", "nonsense"], "argument --public-url: 'nonsense' is not an http"),
        (["serve", "--grace", "nan"], "argument --grace: 'nan' is not a finite number"),
        (["run", "--port", "-1"], "argument --port: -1 is not a port"),
        (["run", "--workers", "0"], "argument --workers: 0 is too small"),
        (["run", "--levels", "go:1"], "argument --levels: --levels item 'go:1': unknown game 'go'"),
        (["bots", "--max-games", "0"], "argument --max-games: 0 is too small"),
        (["bots", "--public-level", "9"], "argument --public-level: 9 is not a level"),
        (
            ["bots", "--server", "http://127.0.0.1:8765/ws"],
            "argument --server: 'http://127.0.0.1:8765/ws' is not",
        ),
        (["bots", "--mqtt", "mqtt://broker:99999"], "argument --mqtt: unsupported MQTT URL"),
        # A password in a refused URL is not shown.
        (
            ["serve", "--db", "mysql://a:S3cret@db/x"],
            "argument --db: unsupported database URL mysql://a:***@db/x",
        ),
        (
            ["serve", "--mqtt", "mqtt://a:S3cret@broker:0x"],
            "argument --mqtt: unsupported MQTT URL 'mqtt://a:***@broker:0x'",
        ),
        (
            ["bots", "--mqtt", "http://a:S3cret@broker"],
            "argument --mqtt: unsupported MQTT URL 'http://a:***@broker'",
        ),
    ],
)
def test_bad_options_are_refused_in_one_line_before_anything_starts(
    argv: list[str], refusal: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"plyarena {argv[0]}: error: {refusal}" in err and "Traceback" not in err
    assert "S3cret" not in err


def test_a_bad_setting_in_the_environment_stops_serve_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PLYARENA_EVENT_LOOP", "fastest")
    assert main(["serve", "--port", "0"]) == 1
    assert capsys.readouterr().err == (
        "plyarena serve: error: PLYARENA_EVENT_LOOP='fastest': expected one of uvloop, asyncio\n"
    )


@pytest.mark.parametrize("problem", ["missing directory", "not a database"])
def test_a_database_that_cannot_be_opened_is_said_in_one_line(tmp_path: Path, problem: str) -> None:
    """In a process of its own: the whole of what it prints, threads' last words included."""
    if problem == "missing directory":
        path, reason = tmp_path / "missing" / "arena.sqlite3", "No such file or directory"
    else:
        path, reason = tmp_path / "notes.txt", "file is not a database"
        path.write_text("not a database at all, but long enough to have a header's worth of bytes " * 4)
    done = subprocess.run(
        [sys.executable, "-m", "plyarena", "serve", "--port", "0", "--db", f"sqlite+aiosqlite:///{path}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert (
        done.stderr
        == f"plyarena serve: error: cannot open the database sqlite+aiosqlite:///{path}: {reason}\n"
    )


def test_a_port_in_use_is_said_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        database = f"sqlite+aiosqlite:///{tmp_path / 'arena.sqlite3'}"
        assert main(["serve", "--port", str(port), "--db", database]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"plyarena serve: error: cannot listen on 127.0.0.1:{port}: ")
    assert "address already in use" in err and err.count("\n") == 1


def test_a_server_config_refuses_a_port_out_of_range() -> None:
    with pytest.raises(ValueError, match="port 70000 is not one"):
        ServerConfig(port=70_000)


def test_listening_everywhere_without_a_public_url_is_warned_of() -> None:
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--port", "8765"])
    warning = unreachable_url_warning(config_from(args))
    assert warning is not None and "pass --public-url" in warning and "http://0.0.0.0:8765" in warning
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--public-url", "http://arena.example"])
    assert unreachable_url_warning(config_from(args)) is None
    assert unreachable_url_warning(config_from(build_parser().parse_args(["serve"]))) is None


def test_the_fair_use_of_bots_is_tuned_from_the_command_line() -> None:
    defaults = config_from(build_parser().parse_args(["serve"]))
    assert (defaults.max_bot_games, defaults.bot_idle_untimed_s) == (2, 120.0)
    args = build_parser().parse_args(["serve", "--max-bot-games", "0", "--bot-idle-untimed", "30"])
    assert (config_from(args).max_bot_games, config_from(args).bot_idle_untimed_s) == (0, 30.0)
    never = build_parser().parse_args(["serve", "--bot-idle-untimed", "0"])
    assert config_from(never).bot_idle_untimed_s is None, "0: a stalled bot game is never ended"
    with pytest.raises(ValueError, match="must be positive"):
        ServerConfig(bot_idle_untimed_s=0.0)


def test_the_fleet_key_comes_from_its_file_else_the_environment_and_shows_in_no_repr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(FLEET_KEY_ENV, raising=False)
    assert config_from(build_parser().parse_args(["serve"])).fleet_key is None, "no key: no one's notes"
    monkeypatch.setenv(FLEET_KEY_ENV, "from-the-environment-0123")
    assert config_from(build_parser().parse_args(["serve"])).fleet_key == "from-the-environment-0123"
    path = tmp_path / "fleet.key"
    path.write_text("from-the-file-0123456789\n")
    for command in ("serve", "bots"):
        args = build_parser().parse_args([command, "--fleet-key-file", str(path)])
        config = config_from(args) if command == "serve" else fleet_config(args)
        assert config.fleet_key == "from-the-file-0123456789", "the file first, without its line end"
        assert "0123456789" not in repr(config)


@pytest.mark.parametrize(
    ("content", "refusal"),
    [
        (None, "cannot read the fleet key from "),
        ("short", "a fleet key is 16 to 256 printable ASCII characters without spaces"),
        ("has a space in it, long enough", "a fleet key is 16 to 256"),
    ],
)
def test_a_fleet_key_that_cannot_be_one_stops_serve_in_one_line_without_showing_it(
    tmp_path: Path, content: str | None, refusal: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fleet.key"
    if content is not None:
        path.write_text(content)
    assert main(["serve", "--port", "0", "--fleet-key-file", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("plyarena serve: error: ") and refusal in err and err.count("\n") == 1
    assert content is None or content not in err

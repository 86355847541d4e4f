"""The ``plyarena`` command line: every command's help renders."""

from __future__ import annotations

import argparse

import pytest

from plyarena.cli import build_parser, main


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

"""Outside UCI engines as bots (bots/engine.py), against Debian's Stockfish: moves, scores, restarts.

The games such an engine plays over real sockets, and the one whose engine is killed mid-game, are in
tests/test_chess_e2e.py; here the engine is asked directly, as a bot of a fleet asks it.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator

import chess
import chess.engine
import pytest
from support.waiting import wait_until

from bots.engine import BlockingEngines, EngineStartError, OutsideEngine, engine_score, parse_engine
from bots.fleet import parse_levels
from bots.levels import level
from bots.pool import SearchError, ThinkRequest
from bots.result import WIN
from plyarena.cli import build_parser
from plyarena.commands.bots import fleet_config, running_engines
from plyarena.options import CommandError

FOOLS_MATE_TO_COME = ("f2f3", "e7e5", "g2g4")
SILENT_ENGINE = """
import sys
options = "option name UCI_LimitStrength type check default false"  # the one option level 8 sets
answers = {"uci": f"id name silent\\n{options}\\nuciok", "isready": "readyok", "go": "bestmove e2e4"}
for line in sys.stdin:
    command = (line.split() or [""])[0]
    if command == "quit":
        break
    if command in answers:
        print(answers[command], flush=True)
"""
"""A UCI engine that plays 1. e4 and says nothing of it: no depth, nodes, score or pv."""
"""Black mates at once with Qh4#."""


@pytest.fixture
async def stockfish(stockfish_path: str) -> AsyncIterator[OutsideEngine]:
    async with OutsideEngine("stockfish", [stockfish_path], hang_grace_s=0.5) as engine:
        yield engine


def request(*moves: str, budget_ms: int = 100) -> ThinkRequest:
    return ThinkRequest("chess", tuple(moves), 8, budget_ms=budget_ms)


async def test_the_engine_answers_a_request_as_the_search_pool_does(stockfish: OutsideEngine) -> None:
    result = await stockfish.think(request("e2e4", "e7e5"))
    board = chess.Board()
    for text in ("e2e4", "e7e5"):
        board.push_uci(text)
    assert chess.Move.from_uci(result.move) in board.legal_moves
    assert result.pv[0] == result.move and result.source == "searched"
    assert result.depth is not None and result.depth >= 1 and result.nodes is not None and result.nodes > 0
    assert result.score is not None and abs(result.score) < 1_000, "an opening is about level"


async def test_a_mate_is_scored_as_our_search_scores_one(stockfish: OutsideEngine) -> None:
    result = await stockfish.think(request(*FOOLS_MATE_TO_COME))
    assert result.move == "d8h4" and result.score == WIN - 1


async def test_a_hung_engine_is_killed_and_the_move_asked_of_a_new_one(stockfish: OutsideEngine) -> None:
    await stockfish.start()
    (hung,) = stockfish.pids
    os.kill(hung, signal.SIGSTOP)  # alive, and silent
    started = time.monotonic()
    result = await stockfish.think(request("e2e4"))
    assert result.move in {
        move.uci()
        for move in chess.Board("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").legal_moves
    }
    assert stockfish.restarts == 1 and hung not in stockfish.pids
    assert time.monotonic() - started < 0.1 + 0.5 + 5, "the move's time, the grace, a restart"


async def test_an_engine_that_died_between_moves_is_started_again(stockfish: OutsideEngine) -> None:
    await stockfish.start()
    (dead,) = stockfish.pids
    os.kill(dead, signal.SIGKILL)
    await wait_until(lambda: not stockfish.pids, 5, "the engine's death to be noticed")
    result = await stockfish.think(request("e2e4", "e7e5"))
    assert result.pv[0] == result.move and stockfish.restarts == 1 and len(stockfish.pids) == 1


async def test_an_engine_that_keeps_failing_gives_up_with_a_search_error(tmp_path: object) -> None:
    async with OutsideEngine("stockfish", [sys.executable, "-c", "import sys; sys.exit(3)"]) as broken:
        with pytest.raises(EngineStartError, match="cannot start engine stockfish"):
            await broken.start()
        with pytest.raises(SearchError, match="failed 3 times on move 1"):
            await broken.think(request())


async def test_what_the_engine_does_not_say_is_not_made_up() -> None:
    async with OutsideEngine("stockfish", [sys.executable, "-c", SILENT_ENGINE]) as silent:
        result = await silent.think(request())
    assert (result.move, result.pv, result.source) == ("e2e4", ("e2e4",), "searched")
    assert (result.score, result.depth, result.nodes) == (None, None, None)


async def test_a_request_for_a_level_another_plays_is_refused(stockfish: OutsideEngine) -> None:
    with pytest.raises(SearchError, match="level 3 of chess is not played by engine stockfish"):
        await stockfish.think(ThinkRequest("chess", (), 3, budget_ms=100))


def test_engine_scores_are_centipawns_or_mates_in_plies() -> None:
    white = chess.WHITE
    assert engine_score(chess.engine.PovScore(chess.engine.Cp(35), white), white) == 35
    assert engine_score(chess.engine.PovScore(chess.engine.Cp(35), white), chess.BLACK) == -35
    assert engine_score(chess.engine.PovScore(chess.engine.Mate(2), white), white) == WIN - 3
    assert engine_score(chess.engine.PovScore(chess.engine.Mate(-2), white), white) == 4 - WIN
    assert engine_score(None, white) is None  # an engine that gave no score: none is made up


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("stockfish", "expected NAME=COMMAND"),
        ("=/usr/games/stockfish", "expected NAME=COMMAND"),
        ("stockfish=", "the command is missing"),
        ("stockfish='unclosed", "cannot read its command"),
    ],
)
def test_a_bad_engine_option_is_named(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_engine(text)
    assert parse_engine("sf=/usr/games/stockfish --flag") == ("sf", ["/usr/games/stockfish", "--flag"])


def test_a_fleet_offers_an_engine_level_only_with_its_engine() -> None:
    assert 8 not in parse_levels(None)["chess"]
    assert 8 in parse_levels(None, engines=["stockfish"])["chess"]
    assert parse_levels("8") == {game: (8,) for game in ("checkers", "connect4", "othello", "tictactoe")}
    with pytest.raises(ValueError, match=r"level 8 of chess is played by the outside engine 'stockfish'"):
        parse_levels("chess:1-8")
    args = build_parser().parse_args(
        ["bots", "--levels", "chess:8", "--engine", "stockfish=/usr/games/stockfish"]
    )
    assert fleet_config(args).levels == {"chess": (8,)}
    with pytest.raises(CommandError, match="run it with --engine stockfish=COMMAND"):
        fleet_config(build_parser().parse_args(["bots", "--levels", "chess:8"]))


async def test_the_command_refuses_an_engine_that_does_not_start() -> None:
    args = build_parser().parse_args(
        ["bots", "--engine", f"stockfish={sys.executable} -c 'import sys; sys.exit(3)'"]
    )
    with pytest.raises(CommandError, match="--engine: cannot start engine stockfish"):
        async with running_engines(args):
            pass


def test_blocking_engines_play_only_engine_levels_they_were_given() -> None:
    """A tournament worker's engines (bots.engine.BlockingEngines) name what is missing."""
    with BlockingEngines({}) as engines:
        with pytest.raises(ValueError, match="level 8 of chess needs engine 'stockfish'; given: none"):
            engines.think(level("chess", 8), request())
        with pytest.raises(ValueError, match="level 1 of chess is played by our search"):
            engines.think(level("chess", 1), request())


def test_blocking_engines_answer_as_the_engine_does(stockfish_path: str) -> None:
    with BlockingEngines({"stockfish": [stockfish_path]}) as engines:
        result = engines.think(level("chess", 8), request(*FOOLS_MATE_TO_COME))
    assert result.move == "d8h4" and result.score > 0

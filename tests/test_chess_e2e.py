"""Chess over real sockets: two people to checkmate, a spectator, the PGN export, our bots and Stockfish.

Every server here is a real one on a free port, every player and bot reaches it over the WebSocket only,
and the export is read back by python-chess, as any chess program would read it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
from support.fixtures import Connect
from support.play import open_match
from support.waiting import wait_until

from bots import wire
from bots.client import BotPlayer, BotSpec
from bots.engine import OutsideEngine
from bots.fleet import Fleet, FleetConfig, parse_levels
from bots.link import Backoff
from bots.pool import SearchPool
from games import get_game
from server.app import Server

FAST_BACKOFF = Backoff(initial_s=0.05, max_s=0.5)

PEOPLES_GAME = [
    "e2e4", "d7d5", "e4d5", "c7c6", "d5c6", "g8f6", "c6b7", "b8d7", "b7a8q", "e7e6", "g1f3", "f8c5",
    "f1c4", "h7h6", "e1g1", "h8g8", "d2d4", "g8h8", "d4c5", "h8g8", "b1a3", "g8h8", "d1d4", "h8g8",
    "a3b5", "c8b7", "b5c7", "e8f8", "d4d6",
]  # fmt: skip
"""White takes a rook by promoting a pawn (ply 8), castles (ply 14) and mates with the queen (Qd6#)."""
SENT_AS_SAN = {8: "bxa8=Q", 14: "O-O", 28: "Qd6#"}
"""Plies the players write in SAN, which the server reads and passes on in UCI."""


@pytest.fixture
def arena_db_url(tmp_path: Path) -> str:
    """SQLite only: chess adds nothing a database sees (moves are text); the server's suite covers both."""
    return f"sqlite+aiosqlite:///{tmp_path / 'chess.sqlite3'}"


def get_text(url: str) -> tuple[str, str]:
    """The body of ``url`` and its Content-Disposition header."""
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode(), response.headers.get("Content-Disposition", "")


async def exported_pgn(server: Server, match_id: str) -> chess.pgn.Game:
    """The match's export, read by python-chess (which must find no error in it)."""
    text, disposition = await asyncio.to_thread(get_text, f"{server.http_url}/api/matches/{match_id}/export")
    assert disposition.endswith('.pgn"'), disposition
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and not game.errors, (game and game.errors, text)
    return game


async def record_of(server: Server, match_id: str) -> dict[str, Any]:
    text, _ = await asyncio.to_thread(get_text, f"{server.http_url}/api/matches/{match_id}")
    return json.loads(text)


# ---------------------------------------------------------------------- people


async def test_two_people_play_to_checkmate_with_a_promotion_and_castling_and_a_spectator_sees_it(
    arena: Server, connect: Connect
) -> None:
    white, black = await connect.player(arena, "Wanda"), await connect.player(arena, "Boris")
    joined = await open_match(white, black, "chess", time_control="5+3")
    match_id = joined["match_id"]
    assert joined["board"][7] == "RNBQKBNR" and "e2e4" in joined["legal"] and joined["display"] == []
    spectator = await connect.player(arena, "Sam")
    watched = await spectator.request("match.watch", match_id=match_id)
    assert watched["you"] is None and watched["status"] == "live"

    seats = (white, black)
    for ply, move in enumerate(PEOPLES_GAME):
        sent = SENT_AS_SAN.get(ply, move)
        reply = await seats[ply % 2].request("move", match_id=match_id, ply=ply, move=sent)
        assert reply["type"] == "moved" and reply["move"] == move, reply
    assert reply["display"] == "Qd6#", "the last move's reply, in SAN for people too"

    seen = [
        await spectator.expect(type_="moved", match_id=match_id, ply=ply) for ply in range(len(PEOPLES_GAME))
    ]
    ended = await spectator.expect(type_="ended", match_id=match_id)
    assert (ended["status"], ended["winner"], ended["reason"]) == ("finished", 0, "checkmate")
    assert [moved["move"] for moved in seen] == PEOPLES_GAME
    assert [seen[ply]["display"] for ply in SENT_AS_SAN] == list(SENT_AS_SAN.values())
    final = get_game("chess").replay(PEOPLES_GAME)
    assert seen[-1]["board"] == list(final.grid()) and seen[-1]["legal"] == []
    assert seen[8]["board"][0][0] == "Q", "the pawn that took on a8 became a queen"
    assert seen[14]["board"][7][5:7] == "RK", "castled: the king on g1, the rook on f1"

    state = await spectator.request("match.watch", match_id=match_id)
    assert state["status"] == "finished" and state["display"][8] == "bxa8=Q" and state["display"][14] == "O-O"
    record = await record_of(arena, match_id)
    assert [move["display"] for move in record["moves"]] == state["display"]

    game = await exported_pgn(arena, match_id)
    assert game.end().board().fen() == final.board.fen()
    assert game.end().board().is_checkmate()
    assert (game.headers["White"], game.headers["Black"], game.headers["Result"]) == ("Wanda", "Boris", "1-0")
    assert (game.headers["TimeControl"], game.headers["Termination"]) == ("300+3", "normal")


async def test_a_bad_chess_move_is_refused_with_the_rules_reason(arena: Server, connect: Connect) -> None:
    white, black = await connect.player(arena, "Wanda"), await connect.player(arena, "Boris")
    match_id = (await open_match(white, black, "chess"))["match_id"]
    for move, reason in (
        ("e2e5", "the White pawn on e2 cannot move to e5"),
        ("O-O", "no legal move of White's is O-O here"),
        ("e9", "expected a move in UCI"),
    ):
        refused = await white.request("move", match_id=match_id, ply=0, move=move)
        assert refused["type"] == "error" and refused["code"] == "illegal_move", refused
        assert reason in refused["message"] and repr(move) in refused["message"]


async def test_api_games_lists_chess_with_its_pieces_and_san(arena: Server) -> None:
    text, _ = await asyncio.to_thread(get_text, f"{arena.http_url}/api/games")
    games = {game["name"]: game for game in json.loads(text)["games"]}
    chess_info = games["chess"]
    assert chess_info["sides"] == ["White", "Black"] and chess_info["display_notation"].startswith("SAN")
    assert chess_info["pieces"]["K"] == {"seat": 0, "name": "king"}
    assert chess_info["pieces"]["p"] == {"seat": 1, "name": "pawn"}
    assert games["checkers"]["pieces"]["X"] == {"seat": 0, "name": "king"}
    assert games["connect4"]["display_notation"] is None


# ---------------------------------------------------------------------- bots


@pytest.fixture(scope="module")
def pool() -> Iterator[SearchPool]:
    shared = SearchPool(1)
    yield shared
    shared.close()


@pytest.fixture
async def stockfish(stockfish_path: str) -> AsyncIterator[OutsideEngine]:
    async with OutsideEngine("stockfish", [stockfish_path]) as engine:
        await engine.start()
        yield engine


@pytest.fixture
async def stockfish_fleet(arena: Server, pool: SearchPool, stockfish: OutsideEngine) -> AsyncIterator[Fleet]:
    """A fleet that seats Stockfish (chess's level 8) in the lobby's requests for it."""
    config = FleetConfig(levels=parse_levels("chess:8", engines=["stockfish"]), idle_wait_s=None,
                         backoff=FAST_BACKOFF)  # fmt: skip
    async with Fleet(pool, config, engines={"stockfish": stockfish}) as fleet:
        fleet.follow_server(arena.ws_url)
        yield fleet


@contextlib.asynccontextmanager
async def level_one_against_stockfish(
    arena: Server, pool: SearchPool, time_control: str
) -> AsyncIterator[tuple[BotPlayer, str]]:
    """Our level-1 bot, White, in a match that asks the lobby for Stockfish; the bot and the match id."""
    async with BotPlayer(arena.ws_url, BotSpec.of("chess", 1), pool, backoff=FAST_BACKOFF, seed=1) as ours:
        match_id = await ours.create("chess", seat=0, time_control=time_control, bot=wire.BotRequest(level=8))
        yield ours, match_id


async def the_end(player: BotPlayer, match_id: str, timeout: float = 120) -> wire.MatchResult:
    await wait_until(lambda: match_id in player.results, timeout, f"the end of match {match_id}")
    return player.results[match_id]


def rules_say(moves: list[str]) -> str | None:
    outcome = get_game("chess").replay(moves).outcome()
    return None if outcome is None else outcome.reason


@pytest.mark.slow
async def test_our_level_one_bot_plays_stockfish_to_the_end_and_the_pgn_carries_their_evals(
    arena: Server, pool: SearchPool, stockfish_fleet: Fleet
) -> None:
    async with level_one_against_stockfish(arena, pool, "0:10+0") as (ours, match_id):
        result = await the_end(ours, match_id)
        moves = ours.sessions[match_id].moves

    assert result.status == "finished" and result.reason == rules_say(moves)
    record = await record_of(arena, match_id)
    names = [seat["player"]["name"] for seat in sorted(record["seats"], key=lambda seat: seat["seat"])]
    assert names == ["alphabeta-chess-L1", "stockfish-chess-L8"]
    stockfish_moves = [move for move in record["moves"] if move["seat"] == 1]
    assert all(
        move["engine"]["depth"] >= 1 and move["engine"]["pv"][0] == move["move"] for move in stockfish_moves
    )

    game = await exported_pgn(arena, match_id)
    assert game.end().board().fen() == get_game("chess").replay(moves).board.fen()
    evals = [node.eval() for node in game.mainline()]
    assert len(evals) == len(moves) and all(score is not None for score in evals), "every bot move's eval"
    if result.winner == 1:  # as it nearly always is: Stockfish saw its mate, and said so from White's side
        assert game.headers["Result"] == "0-1"
        assert (
            evals[-1] is not None and evals[-1].white().is_mate() and evals[-1].white() < chess.engine.Cp(0)
        )


@pytest.mark.slow
async def test_killing_stockfish_mid_game_does_not_end_the_game(
    arena: Server, pool: SearchPool, stockfish: OutsideEngine, stockfish_fleet: Fleet
) -> None:
    async with level_one_against_stockfish(arena, pool, "0:20+0") as (ours, match_id):
        # Right after Stockfish's first move: no game can be over yet, so it must move again.
        await wait_until(lambda: len(ours.sessions[match_id].moves) >= 2, 60, "Stockfish's first move")
        killed = stockfish.pids
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        result = await the_end(ours, match_id)
        moves = ours.sessions[match_id].moves

    assert killed and stockfish.restarts >= 1 and not set(killed) & set(stockfish.pids)
    assert len(moves) > 3, "Stockfish moved again after the kill"
    assert result.status == "finished" and result.reason == rules_say(moves), result

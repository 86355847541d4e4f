"""Rated matches over real sockets: people's Glicko-2 ratings after rated games, profiles that show them,
casual games that change nothing, and bots rated at the rating their fleet announces."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import delete
from support.fixtures import Connect, StartServer
from support.play import decisive_game, open_match, play_moves
from test_server_http import get_json

from server.app import Server
from server.glicko2 import NEW_PLAYER, Glicko, Result, rate
from server.rating_updates import BOT_DEVIATION
from server.storage.engine import create_engine
from server.storage.models import RatingChangeRow, RatingRow
from server.storage.ratings import RatingBook, Side

GAME = "connect4"
WIN = list(decisive_game(GAME))  # seat 0 wins


async def profile_when(
    arena: Server, name: str, ready: Any, *, query: str = "", timeout: float = 10.0
) -> dict[str, Any]:
    """The profile of ``name`` once ``ready(profile)`` holds (ratings are stored just after the result)."""
    deadline = time.monotonic() + timeout
    while True:
        profile: dict[str, Any] = await get_json(arena, f"/api/players/{quote(name, safe=':')}{query}")
        if ready(profile):
            return profile
        assert time.monotonic() < deadline, f"the profile of {name} never got there: {profile}"
        await asyncio.sleep(0.05)


def rated_in(game: str) -> Any:
    return lambda profile: game in profile["ratings"]


async def test_two_people_play_a_rated_game_and_both_profiles_show_it(
    arena: Server, connect: Connect
) -> None:
    alice = await connect.player(arena, "Alice-r")
    bob = await connect.player(arena, "Bob-r")
    state = await open_match(alice, bob, GAME, rated=True)
    assert state["options"]["rated"] is True
    match_id = state["match_id"]
    await play_moves(GAME, (alice, bob), match_id, WIN)

    winner = rate(NEW_PLAYER, [Result(NEW_PLAYER, 1.0)], periods=0.0)
    loser = rate(NEW_PLAYER, [Result(NEW_PLAYER, 0.0)], periods=0.0)
    alices = await profile_when(arena, f"id:{alice.player_id}", rated_in(GAME))
    bobs = await profile_when(arena, f"id:{bob.player_id}", rated_in(GAME))
    for profile, after, result in ((alices, winner, "win"), (bobs, loser, "loss")):
        rating = profile["ratings"][GAME]
        assert rating["rating"] == round(after.rating)
        assert rating["deviation"] == round(after.deviation)
        assert rating["provisional"] is True and rating["games"] == 1
        assert [point["match_id"] for point in rating["history"]] == [match_id]
        [game] = profile["games"]
        assert game["match_id"] == match_id and game["rated"] is True and game["result"] == result
        assert game["rating"] == {"before": 1500, "after": round(after.rating)}
        assert profile["counts"][GAME] == {
            "wins": int(result == "win"),
            "draws": 0,
            "losses": int(result == "loss"),
        }
    assert alices["games"][0]["opponent"]["name"] == "Bob-r"

    # The match counts once: a sweep (another instance's, or after a restart) finds nothing left to rate.
    assert await arena.rater.sweep() == 0
    assert await arena.rater.rate(match_id) is False
    assert (await get_json(arena, f"/api/players/id:{alice.player_id}"))["ratings"] == alices["ratings"]
    # Quick pairing reads the same rating (its deviation grown by the moments since), 1500/350 unrated.
    rating, deviation = await arena.store.rating_of(alice.player_id, GAME)
    assert rating == pytest.approx(winner.rating) and deviation == pytest.approx(winner.deviation, abs=0.01)
    assert await arena.store.rating_of(alice.player_id, "chess") == (1500, 350)


async def test_a_casual_game_changes_no_rating(arena: Server, connect: Connect) -> None:
    carol = await connect.player(arena, "Carol-c")
    dave = await connect.player(arena, "Dave-c")
    casual = await open_match(carol, dave, GAME)
    assert casual["options"]["rated"] is False
    await play_moves(GAME, (carol, dave), casual["match_id"], WIN)
    assert await arena.rater.sweep() == 0
    # A rated game after it: once its rating is there, the casual one shows none.
    rated = await open_match(carol, dave, GAME, rated=True)
    await play_moves(GAME, (carol, dave), rated["match_id"], WIN)
    profile = await profile_when(arena, f"id:{carol.player_id}", rated_in(GAME))
    assert profile["ratings"][GAME]["games"] == 1
    assert [point["match_id"] for point in profile["ratings"][GAME]["history"]] == [rated["match_id"]]
    games = {game["match_id"]: game for game in profile["games"]}
    assert games[casual["match_id"]]["rated"] is False and games[casual["match_id"]]["rating"] is None
    assert profile["counts"][GAME]["wins"] == 2
    casual_only = await get_json(arena, f"/api/players/id:{carol.player_id}?rated=false")
    assert [game["match_id"] for game in casual_only["games"]] == [casual["match_id"]]
    losses = await get_json(arena, f"/api/players/id:{carol.player_id}?result=loss")
    assert losses["games"] == []
    first_page = await get_json(arena, f"/api/players/id:{carol.player_id}?limit=1")
    assert [game["match_id"] for game in first_page["games"]] == [rated["match_id"]]
    assert first_page["next_before"] == rated["match_id"]
    second = await get_json(arena, f"/api/players/id:{carol.player_id}?limit=1&before={rated['match_id']}")
    assert [game["match_id"] for game in second["games"]] == [casual["match_id"]]


def offer(elo: int) -> bytes:
    return json.dumps(
        {
            "fleet": "rated-fleet",
            "games": {
                GAME: [
                    {
                        "level": 3,
                        "style": "alphabeta",
                        "name": "Level 3",
                        "player": "alphabeta-c4-L3",
                        "rating": {"elo": elo, "ci_low": elo - 100, "ci_high": elo + 100, "games": 240},
                    },
                    {"level": 4, "style": "alphabeta", "name": "Level 4", "player": "alphabeta-c4-L4"},
                ]
            },
        }
    ).encode()


async def test_a_rated_game_against_a_bot_uses_its_announced_rating(arena: Server, connect: Connect) -> None:
    arena.bus.publish_nowait("plyarena/v1/bots/rated-fleet", offer(1900), retain=True)
    deadline = time.monotonic() + 10
    while not (await get_json(arena, "/api/bots"))["games"].get(GAME):
        assert time.monotonic() < deadline, "the fleet's offer never reached the catalog"
        await asyncio.sleep(0.05)

    erin = await connect.player(arena, "Erin-b")
    refused = await erin.request("match.create", game=GAME, bot={"level": 4}, rated=True)
    assert refused["type"] == "error" and refused["code"] == "bad_field", refused
    assert "rating" in refused["message"]
    assert (await get_json(arena, f"/api/players/id:{erin.player_id}"))["games"] == []

    state = await erin.request("match.create", game=GAME, seat=0, bot={"level": 3}, rated=True)
    assert state["options"]["rated"] is True and state["options"]["bot_rating"] == 1900
    bot = await connect.player(arena, "alphabeta-c4-L3", bot=True)
    joined = await bot.request("match.join", match_id=state["match_id"])
    assert joined["status"] == "live", joined
    await play_moves(GAME, (erin, bot), state["match_id"], WIN)

    expected = rate(NEW_PLAYER, [Result(Glicko(1900, BOT_DEVIATION), 1.0)], periods=0.0)
    profile = await profile_when(arena, f"id:{erin.player_id}", rated_in(GAME))
    assert profile["ratings"][GAME]["rating"] == round(expected.rating)
    assert profile["ratings"][GAME]["deviation"] == round(expected.deviation)
    bots = await get_json(arena, f"/api/players/id:{bot.player_id}")
    assert bots["ratings"] == {}  # the bot keeps its ladder rating
    assert bots["games"][0]["result"] == "loss"


async def test_profiles_by_name_and_bad_queries(arena: Server, connect: Connect) -> None:
    first = await connect.player(arena, "Same Name")
    second = await connect.player(arena, "Same Name")
    profile = await get_json(arena, "/api/players/Same%20Name")
    assert profile["player"]["id"] in (first.player_id, second.player_id)
    assert profile["player"]["name"] == "Same Name"
    await get_json(arena, "/api/players/nobody-here", status=404)
    await get_json(arena, "/api/players/id:0000", status=404)
    # Once claimed, the name stands for its owner (compared as claims are), however recently a guest of
    # that name was seen.
    assert (await first.request("account.register", password="a long password"))["type"] == "account.claimed"
    await connect.player(arena, "Same Name")
    for spelling in ("Same%20Name", "SAME%20NAME"):
        assert (await get_json(arena, f"/api/players/{spelling}"))["player"]["id"] == first.player_id
    for query in ("?result=won", "?rated=yes", "?game=go", "?limit=0", "?limit="):
        error = await get_json(arena, f"/api/players/Same%20Name{query}", status=400)
        assert error["error"]["code"] == "bad_field"


async def test_two_instances_rating_one_match_at_once_rate_it_once(
    arena: Server, connect: Connect, arena_db_url: str
) -> None:
    """Two instances (each its own engine) that find the same match unrated both try: one rates it."""
    frank = await connect.player(arena, "Frank-i")
    gina = await connect.player(arena, "Gina-i")
    state = await open_match(frank, gina, GAME)  # casual: nothing rates it but the two below
    await play_moves(GAME, (frank, gina), state["match_id"], WIN)
    sides = [Side(1.0, player_id=frank.player_id), Side(0.0, player_id=gina.player_id)]
    other = create_engine(arena_db_url)
    try:
        at = datetime.now(UTC)
        done = await asyncio.gather(
            arena.store.ratings.rate(state["match_id"], GAME, sides, at),
            RatingBook(other).rate(state["match_id"], GAME, sides, at),
        )
    finally:
        await other.dispose()
    assert sorted(done) == [False, True]
    profile = await get_json(arena, f"/api/players/id:{frank.player_id}")
    assert profile["ratings"][GAME]["games"] == 1
    assert [point["match_id"] for point in profile["ratings"][GAME]["history"]] == [state["match_id"]]


async def test_a_result_whose_rating_was_lost_is_rated_by_the_next_server(
    start_server: StartServer, connect: Connect, arena_db_url: str
) -> None:
    """A server that died between the result and its rating left a finished rated match unrated: the
    next server to start on the database (here another instance) rates it in its first sweep."""
    first = await start_server()
    hana = await connect.player(first, "Hana-s")
    ivan = await connect.player(first, "Ivan-s")
    state = await open_match(hana, ivan, GAME, rated=True)
    await play_moves(GAME, (hana, ivan), state["match_id"], WIN)
    before = await profile_when(first, f"id:{hana.player_id}", rated_in(GAME))
    # As if the rating had never been stored: what a crash right after the result leaves.
    engine = create_engine(arena_db_url)
    try:
        async with engine.begin() as connection:
            players = RatingChangeRow.player_id.in_([hana.player_id, ivan.player_id])
            await connection.execute(delete(RatingChangeRow).where(players))
            await connection.execute(
                delete(RatingRow).where(RatingRow.player_id.in_([hana.player_id, ivan.player_id]))
            )
    finally:
        await engine.dispose()
    assert (await get_json(first, f"/api/players/id:{hana.player_id}"))["ratings"] == {}

    second = await start_server()
    after = await profile_when(second, f"id:{hana.player_id}", rated_in(GAME))
    assert after["ratings"][GAME]["rating"] == before["ratings"][GAME]["rating"]
    assert [point["match_id"] for point in after["ratings"][GAME]["history"]] == [state["match_id"]]


async def test_a_private_rated_game_counts_but_its_id_stays_private(arena: Server, connect: Connect) -> None:
    jo = await connect.player(arena, "Jo-p")
    kim = await connect.player(arena, "Kim-p")
    state = await open_match(jo, kim, GAME, rated=True, visibility="private")
    await play_moves(GAME, (jo, kim), state["match_id"], WIN)
    profile = await profile_when(arena, f"id:{jo.player_id}", rated_in(GAME))
    assert [point["match_id"] for point in profile["ratings"][GAME]["history"]] == [None]
    assert profile["games"] == [] and profile["counts"] == {}
    assert state["match_id"] not in json.dumps(profile)

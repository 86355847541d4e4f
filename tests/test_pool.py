"""The pool's decisions, without sockets: widening ranges, no one paired twice, the longest waiter first."""

from __future__ import annotations

import itertools
import random

from server.pool import Pool, RatingRange, Waiter
from server.protocol import PlayerInfo


def waiter(
    name: str, rating: float, since: float, *, game: str = "chess", instance: str = "a", tc: str = "5+3"
) -> Waiter:
    return Waiter(PlayerInfo(id=name, name=name, bot=False), instance, game, tc, True, rating, since)


def test_the_range_starts_at_100_widens_by_50_every_5_s_up_to_its_cap() -> None:
    rule = RatingRange()
    assert [rule.after(s) for s in (0, 4.9, 5, 10, 29.9)] == [100, 100, 150, 200, 350]
    assert rule.after(3600) == 500


def test_two_close_waiters_are_paired_at_once_and_far_ones_only_once_the_range_has_widened() -> None:
    pool = Pool()
    pool.join(waiter("ann", 1500, since=0))
    pool.join(waiter("bob", 1580, since=1))
    pairs = pool.pairs(now=1)
    assert [(p.first.player.id, p.second.player.id) for p in pairs] == [("ann", "bob")]

    pool = Pool()
    pool.join(waiter("ann", 1500, since=0))
    pool.join(waiter("cy", 1740, since=0.5))
    assert pool.pairs(now=1) == []
    assert pool.pairs(now=14.9) == []  # (range 200)
    assert [p.second.player.id for p in pool.pairs(now=15)] == ["cy"]  # (range 250)


def test_only_waiters_of_the_same_game_time_control_and_rated_flag_are_paired() -> None:
    pool = Pool()
    pool.join(waiter("ann", 1500, 0))
    pool.join(waiter("bob", 1500, 0, game="othello"))
    pool.join(waiter("cy", 1500, 0, tc="1+0"))
    pool.join(Waiter(PlayerInfo(id="dee", name="dee", bot=False), "a", "chess", "5+3", False, 1500, 0))
    assert pool.pairs(now=100) == []


def test_the_longest_waiter_is_served_first_with_the_closest_rating() -> None:
    pool = Pool()
    pool.join(waiter("new", 1510, since=9))
    pool.join(waiter("old", 1500, since=0))
    pool.join(waiter("mid", 1540, since=5))
    (pair,) = pool.pairs(now=10)
    assert (pair.first.player.id, pair.second.player.id) == ("old", "new")


def test_joining_again_keeps_ones_place_and_a_new_pool_replaces_the_old() -> None:
    pool = Pool()
    pool.join(waiter("ann", 1500, since=0))
    assert pool.join(waiter("ann", 1500, since=20)).since == 0
    pool.join(waiter("ann", 1500, since=30, game="othello"))
    assert pool.waiters["ann"].game == "othello" and pool.waiters["ann"].since == 30


def test_away_and_held_waiters_are_not_paired_and_the_long_gone_are_dropped() -> None:
    pool = Pool()
    pool.join(waiter("ann", 1500, 0))
    pool.join(waiter("bob", 1500, 0))
    pool.away("bob", now=1)
    assert pool.pairs(now=2) == []
    assert pool.drop_away(now=5, grace_s=10, instance="a") == []
    assert [w.player.id for w in pool.drop_away(now=11, grace_s=10, instance="a")] == ["bob"]
    pool.join(waiter("cy", 1500, 0))
    pool.hold("cy")
    assert pool.pairs(now=12) == []
    pool.release("cy")
    assert len(pool.pairs(now=12)) == 1


def test_a_dead_instances_waiters_vanish() -> None:
    pool = Pool()
    pool.join(waiter("ann", 1500, 0, instance="a"))
    pool.join(waiter("bob", 1500, 0, instance="b"))
    assert [w.player.id for w in pool.drop_instance("b")] == ["bob"]
    assert list(pool.waiters) == ["ann"]


def test_the_view_says_how_many_wait_and_the_range_now() -> None:
    pool = Pool()
    pool.join(waiter("ann", 1500, 0))
    pool.join(waiter("bob", 2400, 0))
    view = pool.view("ann", now=5)
    assert view is not None and (view.waiting, view.low, view.high) == (2, 1350, 1650)
    assert pool.view("nobody", now=5) is None


def test_no_one_is_ever_paired_twice_and_every_pair_is_within_range() -> None:
    rng = random.Random(43)
    for _ in range(200):
        pool = Pool()
        for index in range(rng.randrange(2, 30)):
            pool.join(
                waiter(
                    f"p{index}",
                    rng.uniform(800, 2400),
                    since=rng.uniform(0, 60),
                    game=rng.choice(("chess", "othello")),
                )
            )
        now = 60.0
        pairs = pool.pairs(now)
        seated = list(itertools.chain.from_iterable((p.first.player.id, p.second.player.id) for p in pairs))
        assert len(seated) == len(set(seated))
        for pair in pairs:
            assert pair.first.order() < pair.second.order()
            assert pair.first.pool == pair.second.pool
            assert abs(pair.first.rating - pair.second.rating) <= pool.range.after(now - pair.first.since)
        # Fairness: nobody left unpaired could have been paired with another unpaired waiter of the pool.
        left = [w for w in pool.waiters.values() if w.player.id not in seated]
        for a, b in itertools.combinations(left, 2):
            if a.pool == b.pool:
                reach = max(pool.range.after(now - a.since), pool.range.after(now - b.since))
                assert abs(a.rating - b.rating) > reach

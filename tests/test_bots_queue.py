"""The fleet's waiting line, pure: round-robin across the players who asked (bots/queue.py)."""

from __future__ import annotations

from bots.queue import WaitingLine


def line_of(*requests: tuple[str, str]) -> WaitingLine[str]:
    line: WaitingLine[str] = WaitingLine()
    for match_id, player_id in requests:
        assert line.add(match_id, player_id, f"spec of {match_id}")
    return line


def served(line: WaitingLine[str]) -> list[str]:
    order = []
    while (next_one := line.pop()) is not None:
        order.append(next_one[0])
    return order


def test_a_flood_from_one_player_is_served_in_turn_with_a_later_player() -> None:
    line = line_of(("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B"), ("a4", "A"), ("b2", "B"))
    planned = [match_id for match_id, _ in line.in_order()]
    assert planned == ["a1", "b1", "a2", "b2", "a3", "a4"]
    assert served(line) == planned, "the places told are the order served"
    assert len(line) == 0


def test_a_player_just_served_goes_to_the_back_of_the_line() -> None:
    line = line_of(("a1", "A"), ("a2", "A"), ("b1", "B"))
    assert line.pop() == ("a1", "spec of a1")
    line.add("c1", "C", "spec of c1")
    assert [match_id for match_id, _ in line.in_order()] == ["b1", "a2", "c1"]
    line.add("a3", "A", "spec of a3")
    assert served(line) == ["b1", "a2", "c1", "a3"]


def test_a_request_that_goes_takes_its_player_out_of_line_if_it_was_their_last() -> None:
    line = line_of(("a1", "A"), ("b1", "B"), ("b2", "B"))
    assert line.remove("a1") == "spec of a1"
    assert line.remove("a1") is None and "a1" not in line
    assert not line.add("b1", "B", "again"), "a match already waiting keeps its place"
    assert served(line) == ["b1", "b2"]


def test_places_to_note_gives_only_the_places_that_changed() -> None:
    line = line_of(("a1", "A"), ("a2", "A"))
    assert line.places_to_note() == [("a1", "spec of a1", 1), ("a2", "spec of a2", 2)]
    assert line.places_to_note() == []
    line.add("b1", "B", "spec of b1")
    assert line.places_to_note() == [("b1", "spec of b1", 2), ("a2", "spec of a2", 3)]
    line.forget_note("a1")
    assert line.places_to_note() == [("a1", "spec of a1", 1)]

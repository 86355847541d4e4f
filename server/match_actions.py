"""What each request a seated player makes within a match turns into: its intent, the pure
:class:`~server.match.Match` method (or :mod:`server.offers` function) that carries it out.

``MatchHost.act`` (:mod:`server.live`) applies every intent in the same way, like a move; adding a
match action is a function of the match and a line here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from server import offers, protocol
from server.ids import new_match_id
from server.live import Intent
from server.match import Match
from server.protocol import Request

MATCH_ACTIONS: dict[type[Request], Callable[[Any, str], Intent]] = {
    protocol.PlayMove: lambda request, player_id: partial(
        Match.move, player_id=player_id, ply=request.ply, text=request.move, engine=request.engine
    ),
    protocol.Resign: lambda _, player_id: partial(Match.resign, player_id=player_id),
    protocol.OfferDraw: lambda _, player_id: partial(offers.offer_draw, player_id=player_id),
    protocol.AcceptDraw: lambda _, player_id: partial(offers.accept_draw, player_id=player_id),
    protocol.DeclineDraw: lambda _, player_id: partial(offers.decline_draw, player_id=player_id),
    protocol.Abort: lambda _, player_id: partial(Match.abort, player_id=player_id),
    protocol.OfferRematch: lambda _, player_id: partial(
        offers.offer_rematch, player_id=player_id, new_match_id=new_match_id()
    ),
    protocol.AcceptRematch: lambda _, player_id: partial(
        offers.accept_rematch, player_id=player_id, new_match_id=new_match_id()
    ),
    protocol.DeclineRematch: lambda _, player_id: partial(offers.decline_rematch, player_id=player_id),
    protocol.OfferTakeback: lambda _, player_id: partial(offers.offer_takeback, player_id=player_id),
    protocol.AcceptTakeback: lambda _, player_id: partial(offers.accept_takeback, player_id=player_id),
    protocol.DeclineTakeback: lambda _, player_id: partial(offers.decline_takeback, player_id=player_id),
    protocol.SendChat: lambda request, player_id: partial(Match.chat, player_id=player_id, text=request.text),
}
"""The requests a seated player makes within a match, each with what turns it into its intent: the
:class:`Match` method or :mod:`server.offers` function that carries it out, all but the match and the
time bound."""

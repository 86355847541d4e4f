"""The Ply Arena server: WebSocket and HTTP front, lobby, live matches, storage, events.

It validates with :mod:`games` and never searches; bots are ordinary clients.
"""

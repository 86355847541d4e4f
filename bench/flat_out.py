"""``python -m bench.flat_out URL PAIRS SECONDS``: scripted pairs moving as fast as a server answers.

The driver behind the instruction counts of docs/performance.md: run against a server under
callgrind for two lengths of time, the difference of the counts over that of ``plyarena_moves_total``
is what one move costs the server process.
"""

from __future__ import annotations

import asyncio
import random
import sys

from websockets.asyncio.client import connect

from bench.loadgen.direct import DirectClient
from bench.loadgen.recording import Pacing, Recorder
from bench.loadgen.scripted import ScriptedPair

USAGE = "usage: python -m bench.flat_out URL PAIRS SECONDS"


async def drive(url: str, pairs: int, seconds: float) -> None:
    """Play ``pairs`` scripted Connect Four matches at ``url`` for ``seconds``, each move sent as soon as
    the one before it is answered, then drop every connection."""
    connections = [
        await connect(url, compression=None, ping_interval=None, proxy=None, open_timeout=120,
                      create_connection=DirectClient)
        for _ in range(2 * pairs)
    ]  # fmt: skip
    for number, websocket in enumerate(connections):
        await websocket.send(f'{{"type":"hello","name":"p{number}"}}')
        await websocket.recv()
    rng = random.Random(1)
    pacing, recorder = Pacing(), Recorder()
    pacing.set_interval(0.0, rng)  # every move due at once
    matches = [
        ScriptedPair(connections[2 * i], connections[2 * i + 1], game="connect4", time_control="5+3",
                     pacing=pacing, recorder=recorder, rng=rng)
        for i in range(pairs)
    ]  # fmt: skip
    await asyncio.gather(*(match.start() for match in matches))
    await asyncio.sleep(seconds)
    for websocket in connections:
        websocket.transport.abort()


def main(arguments: list[str]) -> int:
    if len(arguments) != 3:
        print(USAGE, file=sys.stderr)
        return 2
    url, pairs, seconds = arguments
    asyncio.run(drive(url, int(pairs), float(seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

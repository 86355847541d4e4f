"""Load generation for ``plyarena bench server``: many WebSocket clients in processes of their own.

The server under test runs as its own process (``plyarena serve``) and the load
comes from a few worker processes, each with its own event loop and thousands
of connections, so the clients never share the server's CPU time slices or its
event loop. Everything here reaches the server only over the wire, as any
client would: WebSocket frames, and ``/metrics`` over HTTP.

- :mod:`bench.loadgen.commands`: what the parent tells the workers and what they answer.
- :mod:`bench.loadgen.recording`: the measurement windows, pacing, and round-trip samples.
- :mod:`bench.loadgen.scripted`: pairs of scripted players that play random legal moves.
- :mod:`bench.loadgen.dephasing`: where in its game each scripted match starts the measured play.
- :mod:`bench.loadgen.bot_pairs`: pairs of real level-1 bots (:class:`bots.client.BotPlayer`).
- :mod:`bench.loadgen.echo`: the raw websockets echo server and its clients, the baseline.
- :mod:`bench.loadgen.worker`: one load-generator process.
- :mod:`bench.loadgen.driver`: the parent's handle on the workers.
- :mod:`bench.loadgen.target`: the processes under test, their ``/metrics``, memory and CPU time.
- :mod:`bench.loadgen.run`: one whole benchmark run; :mod:`bench.loadgen.report`: its figures.
- :mod:`bench.loadgen.failover`: ``--mode failover``, several instances and one killed; its people are
  :mod:`bench.loadgen.following`, who follow their match to its new host.
"""

"""Outside engines as bots: a UCI chess engine (Stockfish, say) thinks where our search would.

A fleet started with ``--engine stockfish=/usr/games/stockfish`` runs that
command and seats it for the levels whose table names it (``style = "engine"``,
``engine = "stockfish"`` in bots/levels.toml, with the level's UCI options and
move time). The engine is driven through python-chess's :mod:`chess.engine`,
which speaks UCI; it answers the same :class:`bots.pool.ThinkRequest` as the
search pool does, so the bot that sends its moves is an ordinary
:class:`bots.client.BotPlayer`, and the server cannot tell it from any other.

An engine process that dies, or does not answer within its move time and
:data:`HANG_GRACE_S`, is killed and started again, and the move is asked of the
new one (at most :data:`MAX_ATTEMPTS` times): the game goes on, and the server
sees only a slow client. Each process thinks about one position at a time (UCI
has no more), so a fleet may run several of the same engine (``processes``);
the games share them in turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import time
from collections.abc import Mapping, Sequence

import chess
import chess.engine

from bots.levels import Level
from bots.levels import level as level_row
from bots.pool import SearchError, ThinkRequest, ThinkResult
from bots.result import WIN
from bots.timing import MIN_BUDGET_MS

log = logging.getLogger(__name__)

HANG_GRACE_S = 5.0
"""How long past its move time an engine may stay silent before it counts as hung and is restarted."""
DEPTH_SEARCH_LIMIT_S = 60.0
"""How long a level bound by depth alone (no move time) may search before its engine counts as hung."""
START_TIMEOUT_S = 10.0
"""How long an engine may take to start and answer UCI's handshake."""
MAX_ATTEMPTS = 3
"""Engine processes one move may try (each a restart after the last one failed) before giving up."""
GAMES = ("chess",)
"""The games a UCI engine plays."""


class EngineStartError(RuntimeError):
    """An engine's command could not be started as a UCI engine; the message names the command."""


def parse_engine(text: str) -> tuple[str, list[str]]:
    """``NAME=COMMAND`` (``stockfish=/usr/games/stockfish``) as the engine's name and its command line.

    Raises ``ValueError`` naming the text when the name is missing or is not a name a level can use, or
    the command is missing or cannot be split into words.
    """
    name, equals, command = text.partition("=")
    if not equals or not name.strip():
        raise ValueError(f"expected NAME=COMMAND, such as stockfish=/usr/games/stockfish, got {text!r}")
    try:
        words = shlex.split(command)
    except ValueError as error:
        raise ValueError(f"engine {name!r}: cannot read its command {command!r}: {error}") from None
    if not words:
        raise ValueError(f"engine {name!r}: the command is missing (NAME=COMMAND)")
    return name.strip(), words


def engine_score(score: chess.engine.PovScore | None, turn: chess.Color) -> int | None:
    """An engine's score in our scale, from ``turn``'s side: centipawns, or a mate ``n`` plies away as
    ``WIN - n`` (``n - WIN`` against), as our search scores one (:mod:`bots.result`); ``None`` if the
    engine gave none."""
    if score is None:
        return None
    relative = score.pov(turn)
    mate = relative.mate()
    if mate is None:
        return relative.score() or 0
    # A mate in n moves is delivered on the mover's n-th move: ply 2n - 1; mated in n, on the opponent's n-th.
    return WIN - (2 * mate - 1) if mate > 0 else -2 * mate - WIN


class _Process:
    """One running engine: python-chess's protocol object and the process under it."""

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: chess.engine.UciProtocol) -> None:
        self.transport = transport
        self.protocol = protocol

    @property
    def pid(self) -> int:
        return self.transport.get_pid()

    def alive(self) -> bool:
        return not self.protocol.returncode.done()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.transport.kill()
        self.transport.close()

    async def quit(self) -> None:
        """Ask the engine to quit, and kill it if it does not within a second."""
        try:
            async with asyncio.timeout(1.0):
                await self.protocol.quit()
        except (TimeoutError, chess.engine.EngineError, chess.engine.EngineTerminatedError):
            pass
        self.kill()


class OutsideEngine:
    """Up to ``processes`` processes of one UCI engine, started when first needed; see the module docstring.

    Use as ``async with OutsideEngine("stockfish", ["/usr/games/stockfish"]) as engine: await
    engine.think(request)``.
    """

    def __init__(
        self, name: str, command: Sequence[str], *, processes: int = 1, hang_grace_s: float = HANG_GRACE_S
    ) -> None:
        if processes < 1:
            raise ValueError(f"an engine needs at least 1 process, got {processes}")
        self.name = name
        self.command = list(command)
        self.hang_grace_s = hang_grace_s
        self.restarts = 0
        """How many times a dead or hung process was killed, to be replaced, for logs and tests."""
        self.running: list[_Process] = []
        """The processes started and not known dead."""
        self._idle: asyncio.Queue[_Process | None] = asyncio.Queue()
        for _ in range(processes):
            self._idle.put_nowait(None)  # a place for a process, started on first use

    @property
    def pids(self) -> list[int]:
        """The process ids of the engine's running processes."""
        return [process.pid for process in self.running if process.alive()]

    async def start(self) -> None:
        """Start one process now, so that a command that is no UCI engine is refused before any game.

        Raises :class:`EngineStartError` naming the command.
        """
        process = await self._idle.get()
        try:
            if process is None or not process.alive():
                process = await self._launch()
        finally:
            self._idle.put_nowait(process)

    async def think(self, request: ThinkRequest) -> ThinkResult:
        """The engine's move for ``request``, as the search pool would answer it.

        Raises :class:`bots.pool.SearchError` if the request is not for this engine, or if every
        attempt failed (the bot then plays a legal move of its own rather than lose on time).
        """
        return await self.think_as(level_row(request.game, request.level), request)

    async def think_as(self, level: Level, request: ThinkRequest) -> ThinkResult:
        """:meth:`think` for ``level`` given whole, rather than by its number in the level table (a
        tournament's anchor, :mod:`bots.anchors`, is in no table)."""
        if level.engine is None or level.engine.name != self.name or request.game not in GAMES:
            raise SearchError(f"level {level.number} of {request.game} is not played by engine {self.name}")
        board = chess.Board()
        for text in request.moves:
            board.push_uci(text)
        budget_ms = _budget_ms(request, level)
        started = time.monotonic()
        process = await self._idle.get()
        try:
            for attempt in range(1, MAX_ATTEMPTS + 1):
                left_ms = None if budget_ms is None else max(MIN_BUDGET_MS, budget_ms - _since_ms(started))
                try:
                    if process is None:
                        process = await self._launch()
                    elif not process.alive():  # died while idle
                        raise chess.engine.EngineTerminatedError(f"engine process {process.pid} died")
                    played = await self._play(process, board, level, left_ms)
                    return _result(board, played, _since_ms(started))
                except (chess.engine.EngineError, EngineStartError, TimeoutError, OSError) as error:
                    log.warning("engine %s failed on move %d (attempt %d of %d): %r; restarting it",
                                self.name, len(request.moves) + 1, attempt, MAX_ATTEMPTS, error)  # fmt: skip
                    if process is not None:
                        self._forget(process)
                        self.restarts += 1
                        process = None
            move_number = len(request.moves) + 1
            raise SearchError(f"engine {self.name} failed {MAX_ATTEMPTS} times on move {move_number}")
        finally:
            self._idle.put_nowait(process)

    async def _play(
        self, process: _Process, board: chess.Board, level: Level, budget_ms: int | None
    ) -> chess.engine.PlayResult:
        """One search of one process, within the move's time and the grace for a hung engine."""
        assert level.engine is not None
        limit = chess.engine.Limit(time=None if budget_ms is None else budget_ms / 1000, depth=level.depth)
        wait_s = (DEPTH_SEARCH_LIMIT_S if budget_ms is None else budget_ms / 1000) + self.hang_grace_s
        async with asyncio.timeout(wait_s):
            return await process.protocol.play(
                board, limit, info=chess.engine.INFO_ALL, options=dict(level.engine.options)
            )

    async def _launch(self) -> _Process:
        """A new process of the engine, through UCI's handshake; :class:`EngineStartError` if it fails."""
        try:
            async with asyncio.timeout(START_TIMEOUT_S):
                transport, protocol = await chess.engine.popen_uci(self.command, setpgrp=True)
        except (OSError, TimeoutError, chess.engine.EngineError) as error:
            command = shlex.join(self.command)
            raise EngineStartError(f"cannot start engine {self.name} ({command}): {error!r}") from None
        process = _Process(transport, protocol)
        self.running.append(process)
        log.info("engine %s started (pid %d): %s", self.name, process.pid, protocol.id.get("name", "?"))
        return process

    def _forget(self, process: _Process) -> None:
        process.kill()
        if process in self.running:
            self.running.remove(process)

    async def close(self) -> None:
        """Stop every process (a search in flight is abandoned)."""
        running, self.running = self.running, []
        await asyncio.gather(*(process.quit() for process in running))

    async def __aenter__(self) -> OutsideEngine:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _budget_ms(request: ThinkRequest, level: Level) -> int | None:
    """The move's time: the request's budget (from the bot's clock, less the time it waited), else the
    level's own move time."""
    budget = request.budget_ms if request.budget_ms is not None else level.time_ms
    if budget is not None and request.submitted_at is not None:
        budget = max(MIN_BUDGET_MS, int(budget - (time.time() - request.submitted_at) * 1000))
    return budget


def _since_ms(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _result(board: chess.Board, played: chess.engine.PlayResult, think_ms: int) -> ThinkResult:
    """The engine's move and what it said of it, as a search of ours reports one: what it did not say
    (a move from its own book may come without depth, nodes or score) stays ``None``."""
    if played.move is None:
        raise chess.engine.EngineError("the engine gave no move")
    info = played.info
    pv = [move.uci() for move in info.get("pv", [])]
    if not pv or pv[0] != played.move.uci():
        pv = [played.move.uci()]
    return ThinkResult(
        move=played.move.uci(),
        score=engine_score(info.get("score"), board.turn),
        depth=info.get("depth"),
        nodes=info.get("nodes"),
        pv=tuple(pv),
        think_ms=think_ms,
        source="searched",
    )


class BlockingEngines:
    """Outside engines for code without an event loop (a tournament's worker process): each engine is
    an :class:`OutsideEngine` of one process, started on first use, on a private loop.

    Use as ``with BlockingEngines({"stockfish": ["/usr/games/stockfish"]}) as engines:
    engines.think(level, request)``.
    """

    def __init__(self, commands: Mapping[str, Sequence[str]]) -> None:
        self.commands = dict(commands)
        self._runner = asyncio.Runner()
        self._engines: dict[str, OutsideEngine] = {}

    def think(self, level: Level, request: ThinkRequest) -> ThinkResult:
        """The move of ``level`` (an engine level) for ``request``; ``ValueError`` if no engine of its name
        was given, :class:`bots.pool.SearchError` as :meth:`OutsideEngine.think_as` raises it."""
        if level.engine is None:
            raise ValueError(f"level {level.number} of {level.game} is played by our search, not an engine")
        name = level.engine.name
        if name not in self._engines:
            if name not in self.commands:
                known = ", ".join(sorted(self.commands)) or "none"
                raise ValueError(
                    f"level {level.number} of {level.game} needs engine {name!r}; given: {known}"
                )
            self._engines[name] = OutsideEngine(name, self.commands[name])
        return self._runner.run(self._engines[name].think_as(level, request))

    def close(self) -> None:
        """Stop every engine process and the loop."""
        try:
            for engine in self._engines.values():
                self._runner.run(engine.close())
        finally:
            self._runner.close()

    def __enter__(self) -> BlockingEngines:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

/**
 * A match, played or watched: the board, both players with their clocks, the
 * controls a player has now, the moves so far, chat, and the result.
 *
 * The view follows the match by `match.watch`: the first time for a full state,
 * after every reconnection from the last seq it saw (see match_model.js). A visitor
 * without a name watches on a connection without one, and is asked for a name only
 * to take a seat. Moves
 * carry the ply they answer and are re-sent after a drop, so no move is lost and
 * none is played twice.
 */

import { boardFor } from "./boards/index.js";
import { shownPlayer } from "./bot_names.js";
import { BoardView } from "./boards/board.js";
import { pieceCounts } from "./boards/pieces.js";
import { describeReason, loadCatalog } from "./catalog.js";
import { ClockFaces } from "./clock.js";
import { h, replaceChildren } from "./dom.js";
import { flipButton } from "./flip.js";
import { LookBack } from "./lookback.js";
import { MatchModel } from "./match_model.js";
import {
  controlsFor,
  ResignButton,
  shareLink,
  showResult,
  spectatorText,
  turnText,
} from "./match_panels.js";
import { renderMoveList } from "./movelist.js";
import { Connection } from "./net.js";
import { PlayerStrip } from "./players.js";
import { sounds } from "./sound.js";

const REFUSALS = {
  not_your_turn: "It is not your turn.",
  match_over: "The match is over.",
  not_started: "The match has not started: it waits for a second player.",
  not_a_player: "You are watching this match, not playing it.",
};

/** The seat a visitor without a name asked to take: taken once the page is back under the name. */
let joinAfterName = null;

export function mount(container, app, [matchId]) {
  const model = new MatchModel();
  const cleanups = [];
  let connection = null;
  let catalog = null;
  let ui = null;
  let buffered = [];
  let sending = null;
  let following = null;
  let botStatus = null; // the latest note on this match's bot request (a full fleet says it is queued)
  let mounted = true;

  replaceChildren(container, h("p", { class: "loading" }, "Loading the match…"));

  /** The seats' players, bots under their levels' names ("Perfect · level 8"). */
  function players() {
    return model.state.seats.map((player) => shownPlayer(player, model.state.game, catalog.levels));
  }

  function names() {
    const sides = catalog.byName[model.state.game]?.sides ?? ["seat 0", "seat 1"];
    return players().map((player, seat) => (player ? `${player.name} (${sides[seat]})` : sides[seat]));
  }

  /** Asks for the match from the last seq seen (a catch-up), or in full the first time. */
  function follow({ full = false } = {}) {
    if (full && following) return following.then(() => follow({ full }));
    following ??= (async () => {
      const resume = model.ready && !full ? { since: model.state.seq, log: model.state.log } : {};
      try {
        await connection.request({ type: "match.watch", match_id: matchId, ...resume });
      } catch (error) {
        if (error.code === "hosted_elsewhere" && followThere(error.url)) return;
        if (error.code === "not_found" || error.code === "hosted_elsewhere") showMissing();
        else if (error.code !== "disconnected")
          app.toast(`Could not follow the match: ${error.message}`, "error");
      } finally {
        following = null;
      }
    })();
    return following;
  }

  /**
   * Follows a match hosted by another instance of this arena there, on a connection of its own as the
   * same player (the instance must allow this page's origin); false if there is nowhere else to go.
   */
  function followThere(url) {
    if (!url || url === connection.url || !mounted) return false;
    const there = new Connection(url, app.identity);
    connection = there;
    cleanups.push(() => there.close(), there.on("*", onMessage), there.onResume(follow));
    there.connect();
    return true;
  }

  function onMessage(message) {
    if (message.match_id !== matchId) return;
    if (message.type === "match.state") {
      const stale = model.ready && message.log === model.state.log && message.seq < model.state.seq;
      if (stale) return;
      const rebuild = !model.ready || model.mySeat !== (message.you ?? null);
      model.reset(message);
      const early = buffered.filter((event) => event.seq > model.state.seq).sort((a, b) => a.seq - b.seq);
      buffered = [];
      for (const event of early) model.apply(event);
      if (rebuild) build(); // the first time, or a seat taken: the player's side goes to the bottom
      settlePendingMove();
      render();
      if (joinAfterName?.matchId === matchId && app.connection) {
        const { seat } = joinAfterName;
        joinAfterName = null;
        if (model.mySeat === null && model.state.status === "open") join(seat);
      }
    } else if (message.type === "match.catchup") {
      for (const event of message.events) onEvent(event, { quiet: true });
      if (model.ready && message.clocks_ms !== undefined) {
        // The catch-up's own clocks are "now"; those of the missed moves were "then".
        Object.assign(model.state, {
          clocks_ms: message.clocks_ms,
          clock_running: message.clock_running ?? null,
        });
        model.state.clocksAt = performance.now();
      }
      settlePendingMove();
      render();
    } else if (message.type === "bot.status") {
      botStatus = message.bot_status;
      render();
    } else if (message.type === "match.spectators") {
      if (!model.ready) return;
      model.state.spectators = message.spectators;
      showSpectators(); // (the count alone: the board is not drawn again for it)
    } else if (typeof message.seq === "number" && message.type !== "error") {
      onEvent(message);
    }
  }

  function onEvent(event, { quiet = false } = {}) {
    if (!model.ready) {
      buffered.push(event);
      return;
    }
    const before = model.state.board;
    const outcome = model.apply(event);
    if (outcome === "gap") {
      follow();
      return;
    }
    if (outcome !== "applied") return;
    if (event.type === "moved" && sending && event.ply === sending.ply) sending = null;
    if (event.type === "ended") ui.error.textContent = ""; // a refusal from the game is moot now
    if (event.type === "takeback.accepted") ui.board.clearSelection(); // a piece picked may be gone
    // "It is not your turn" (or any refusal of the last position) is moot once it is.
    if (event.type === "moved" && model.myTurn) ui.error.textContent = "";
    if (event.type === "started" && !Array.isArray(event.legal)) {
      // `started` says when but not what may be played: ask for the full state, which does.
      follow({ full: true });
    }
    if (event.type === "rematch.started" && model.mySeat !== null && !quiet) {
      // Agreed during the game, the rematch starts with its end: say how that game ended on the way.
      const ended = model.state.result;
      const how = ended ? `Game over: ${describeReason(ended.reason, names())}. ` : "";
      app.toast(`${how}The rematch has started.`);
      app.navigate(`/match/${encodeURIComponent(event.new_match_id)}`);
      return;
    }
    if (!quiet) {
      sounds.cueFor(event, before, model.state.board);
      announce(event);
      render();
    }
  }

  /**
   * After a (re)sync: forget a move in flight that the match has moved past. One it still waits for
   * stays pending: net.js sends it again once the connection is back, with the same ply.
   */
  function settlePendingMove() {
    if (!sending) return;
    if (model.ply !== sending.ply || !model.myTurn) sending = null;
  }

  async function sendMove(move) {
    if (sending) return;
    const ply = model.ply;
    sending = { ply, move };
    ui.status.textContent = `Sending ${move}…`;
    render();
    try {
      await connection.request({ type: "move", match_id: matchId, ply, move }, { resend: true });
      ui.error.textContent = "";
    } catch (error) {
      // Answered already, before a drop, or refused for a position that has moved on since: moot.
      if (["stale_ply", "not_your_turn"].includes(error.code) && model.ply > ply) return;
      explain(error);
    } finally {
      if (sending?.ply === ply) sending = null;
      render();
    }
  }

  function explain(error) {
    const text =
      error.code === "illegal_move"
        ? `Illegal move: ${error.message}`
        : (REFUSALS[error.code] ?? error.message);
    refuse(text);
    ui.board.clearSelection();
  }

  /** Shows why a click did nothing, right under the board; the same refusal again flashes again. */
  function refuse(text) {
    ui.error.textContent = text;
    ui.error.classList.remove("flash");
    void ui.error.offsetWidth; // restart the animation: a second identical refusal must be seen too
    ui.error.classList.add("flash");
  }

  async function act(type, extra = {}) {
    try {
      await connection.request({ type, match_id: matchId, ...extra });
    } catch (error) {
      explain(error);
    }
  }

  /** Takes the free seat of an open match reached by its link (a private match is only reached so). */
  async function join(seat) {
    if (!app.connection) {
      joinAfterName = { matchId, seat }; // a name first: the page comes back under it and takes the seat
      app.signIn(container);
      return;
    }
    try {
      await connection.request({ type: "match.join", match_id: matchId, seat });
    } catch (error) {
      explain(error);
    }
  }

  /** Says out loud what the opponent offered or refused: the controls change, but quietly. */
  function announce(event) {
    if (model.mySeat === null) return;
    if (event.type === "takeback.accepted") {
      if (event.seat === model.mySeat) app.toast(`${names()[1 - event.seat]} accepted your takeback.`);
      return;
    }
    if (event.seat === model.mySeat) return;
    const who = names()[event.seat];
    const text = {
      "draw.offered": `${who} offers a draw.`,
      "draw.declined": `${who} declined the draw.`,
      "takeback.offered": `${who} asks to take back their last move.`,
      "takeback.declined": `${who} declined the takeback.`,
      "rematch.offered": `${who} offers a rematch.`,
      "rematch.declined": `${who} declined the rematch.`,
      "rematch.agreed": "Rematch agreed: it starts when this game ends.",
    }[event.type];
    if (text) app.toast(text);
  }

  function showMissing() {
    app.showProblem(container, "No such match", `There is no match ${matchId} on this server.`);
  }

  /** Builds the page once the first state says which game this is. */
  function build() {
    stopTimers();
    const { state } = model;
    const boardModule = boardFor(state.game);
    const game = catalog.byName[state.game];
    const sides = game?.sides ?? ["First", "Second"];
    const clocks = new ClockFaces(sides.map((side) => `${side}'s clock`));
    const board = new BoardView(boardModule, {
      sides,
      onMove: sendMove,
      onAttempt: sendMove,
      onHint: refuse,
      onSelect: () => (ui.error.textContent = ""), // a new selection makes the last hint moot
      onInactive: () => {
        refuse(
          ui.lookBack.looking
            ? "You are looking at an earlier position: go back to live to play."
            : model.mySeat === null
            ? "You are watching: only the players move."
            : model.isOver
              ? REFUSALS.match_over
              : model.state.status === "open"
                ? REFUSALS.not_started
                : sending
                  ? "Your move is on its way."
                  : REFUSALS.not_your_turn,
        );
      },
    });
    clocks.onLow = (seat) => seat === model.mySeat && sounds.play("lowTime");
    const strips = [0, 1].map((seat) => new PlayerStrip(seat, boardModule, clocks.faces[seat]));
    const bottomSeat = state.you ?? boardModule.spectatorBottomSeat ?? 0;
    const chatLog = h("ol", { class: "chat-log", "aria-label": "Chat messages", "aria-live": "polite" });
    const chatInput = h("input", {
      id: "chat-input",
      name: "text",
      maxlength: 200,
      autocomplete: "off",
      placeholder: "Say something",
    });
    const chatSend = h("button", { type: "submit", "aria-label": "Send chat message" }, "Send");
    const chatError = h("p", { class: "chat-error", id: "chat-error", role: "alert" });
    chatInput.setAttribute("aria-describedby", chatError.id);
    const chatForm = h(
      "form",
      {
        class: "chat-form",
        onsubmit: async (event) => {
          event.preventDefault();
          const text = chatInput.value.trim();
          if (!text || chatSend.disabled) return;
          // The line stays in the box until the server takes it: a refused one can be mended and sent.
          chatSend.disabled = true;
          try {
            await connection.request({ type: "chat", match_id: matchId, text });
            chatError.textContent = "";
            if (chatInput.value.trim() === text) chatInput.value = "";
          } catch (error) {
            chatError.textContent = `Not sent: ${REFUSALS[error.code] ?? error.message}`;
          } finally {
            chatSend.disabled = false;
          }
        },
      },
      h("label", { for: "chat-input", class: "visually-hidden" }, "Chat message"),
      chatInput,
      chatSend,
    );
    ui = {
      resign: new ResignButton(
        () => act("resign"),
        () => renderControls(),
      ),
      boardModule,
      sides,
      clocks,
      board,
      strips,
      top: strips[1 - bottomSeat],
      bottom: strips[bottomSeat],
      title: h("h1", { class: "match-title" }),
      banner: h("div", { class: "banner", role: "status", "aria-live": "polite", hidden: true }),
      status: h("p", { class: "turn-status", role: "status", "aria-live": "polite" }),
      botStatus: h("p", { class: "bot-status muted", role: "status", "aria-live": "polite", hidden: true }),
      spectators: h("p", { class: "spectator-count muted", "aria-label": "Spectators" }),
      error: h("p", { class: "move-error", role: "alert" }),
      controls: h("div", { class: "controls", role: "group", "aria-label": "Match actions" }),
      share: h("div", { class: "share" }),
      moves: h("ol", { class: "move-list", "aria-label": "Moves" }),
      lookBack: new LookBack(matchId, {
        changed: () => render(),
        failed: (text) => app.toast(text, "error"),
      }),
      chatLog,
      chatForm,
      chatError,
      chatNote: h("p", { class: "muted" }, "Spectators read the chat; the players write it."),
    };
    const area = h(
      "section",
      { class: "board-area", "aria-label": "Board and players" },
      ui.title,
      ui.top.element,
      h("div", { class: "board-holder" }, board.element),
      ui.bottom.element,
      // Lines that are often empty, in one block so that empty ones take no room.
      h("div", { class: "board-notes" }, ui.status, ui.botStatus, ui.error, ui.spectators),
    );
    ui.view = h(
      "div",
      { class: `match-view game-${state.game}` },
      area,
      h(
        "aside",
        { class: "side-panel" },
        ui.banner,
        ui.controls,
        ui.share,
        h(
          "section",
          { class: "panel moves-panel", "aria-labelledby": "moves-title" },
          h(
            "div",
            { class: "panel-head" },
            h("h2", { id: "moves-title" }, "Moves"),
            h(
              "div",
              { class: "board-tools", role: "group", "aria-label": "Board" },
              flipButton(board),
              sounds.muteSwitch(),
            ),
          ),
          ui.lookBack.element,
          ui.moves,
        ),
        h(
          "section",
          { class: "panel chat-panel", "aria-labelledby": "chat-title" },
          h("h2", { id: "chat-title" }, "Chat"),
          chatLog,
          chatForm,
          ui.chatError,
          ui.chatNote,
        ),
      ),
    );
    replaceChildren(container, ui.view);
  }

  function showSpectators() {
    ui.spectators.textContent = spectatorText(model);
    ui.spectators.hidden = !ui.spectators.textContent;
  }

  function renderControls() {
    const actions = { act, move: sendMove, join };
    const options = { matchId, sides: ui.sides, sending, resign: ui.resign, ...actions };
    replaceChildren(ui.controls, controlsFor(model, options));
  }

  function renderChat() {
    replaceChildren(
      ui.chatLog,
      model.chat.map((line) =>
        h("li", { class: `seat${line.seat}` }, h("b", {}, `${line.name}: `), line.text),
      ),
    );
    ui.chatLog.scrollTop = ui.chatLog.scrollHeight;
    ui.chatForm.hidden = model.mySeat === null;
    ui.chatNote.hidden = model.mySeat !== null;
  }

  function render() {
    if (!ui) return;
    const { state } = model;
    const game = catalog.byName[state.game];
    const timeControl = state.options?.time_control ?? "untimed";
    const watching = model.mySeat === null ? " · watching" : "";
    const rated = state.options?.rated ? " · rated" : "";
    ui.title.textContent = `${game?.title ?? state.game} · ${timeControl}${rated}${watching}`;
    const live = {
      grid: state.board,
      legal: state.legal,
      lastMove: state.last_move,
      lastMoveDisplay: state.display?.at(-1) ?? null,
      seat: model.mySeat,
      interactive: model.myTurn && !sending,
    };
    ui.board.update(ui.lookBack.boardState(live, state.moves, state.display));
    ui.view.style.setProperty("--board-aspect", ui.board.aspect.toFixed(4));
    ui.clocks.set(state.clocks_ms, state.clock_running, state.clocksAt);
    const counts = pieceCounts(state.board);
    const noun = ui.boardModule.countNoun;
    // "1 disc", "12 discs": the nouns are plurals in -s.
    const countOf = (seat) => `${counts[seat]} ${counts[seat] === 1 ? noun.slice(0, -1) : noun}`;
    const shown = players();
    for (const strip of ui.strips) {
      const seat = strip.seat;
      const player = shown[seat];
      strip.update({
        player,
        side: ui.sides[seat],
        isYou: model.mySeat === seat,
        toMove: model.turn === seat,
        connected: state.connected?.[seat] ?? true,
        returnBy: state.returnBy[seat],
        thinking: Boolean(player?.bot),
        count: noun && state.board.length ? countOf(seat) : null,
      });
    }
    const labels = names();
    ui.status.textContent = turnText(model, { names: labels, sides: ui.sides, sending });
    ui.botStatus.hidden = !(botStatus && state.status === "open");
    ui.botStatus.textContent = ui.botStatus.hidden ? "" : botStatus.reason;
    showSpectators();
    showResult(ui.banner, model, labels);
    renderControls();
    replaceChildren(
      ui.share,
      shareLink(model, matchId, (text) => app.toast(text)),
    );
    document.title = model.myTurn ? "● Your turn · Ply Arena" : `${game?.title ?? "Match"} · Ply Arena`;
    const moveList = { sides: ui.sides, ...ui.lookBack.listOptions(model.ply) };
    renderMoveList(ui.moves, state.display ?? state.moves, moveList);
    renderChat();
  }

  async function start() {
    try {
      catalog = await loadCatalog();
    } catch (error) {
      app.showProblem(container, "The server did not answer", error.message);
      return;
    }
    if (!mounted) return;
    // Watching needs no name: one is asked for only to take a seat (see `join`).
    connection = app.identity ? await app.connectionReady(container) : app.watchConnection();
    if (!mounted) return;
    if (!model.ready) replaceChildren(container, h("p", { class: "loading" }, "Loading the match…"));
    cleanups.push(connection.on("*", onMessage), connection.onResume(follow));
  }

  /** The clocks and absence countdowns stop ticking when their page goes. */
  function stopTimers() {
    ui?.clocks.stop();
    for (const strip of ui?.strips ?? []) strip.stop();
  }

  start();
  return () => {
    mounted = false;
    for (const cleanup of cleanups) cleanup();
    stopTimers();
    ui?.resign.disarm();
    sounds.release();
    // A spectator stops following. A player keeps following from the lobby: leaving would start the
    // grace period of a live match, or cancel an open one the player is waiting in.
    if (connection?.ready && !connection.closed && model.ready && model.mySeat === null) {
      connection.request({ type: "match.leave", match_id: matchId }).catch(() => {});
    }
    document.title = "Ply Arena";
  };
}

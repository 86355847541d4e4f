/**
 * The replay viewer at /replay/{id}: any stored match, step by step.
 *
 * Everything comes from `/api/matches/{id}` (moves, the board after each ply, the
 * bots' search info) and `/api/matches/{id}/export`; no connection is needed, so a
 * replay link works for anyone.
 */

import { api } from "./api.js";
import { boardFor } from "./boards/index.js";
import { BoardView } from "./boards/board.js";
import { describeReason, loadCatalog } from "./catalog.js";
import { h, replaceChildren } from "./dom.js";
import { describeEngine, describeScore, engineFigures, evalGraph, formatNodes } from "./evalgraph.js";
import { exportBox } from "./export_box.js";
import { flipButton } from "./flip.js";
import { icon } from "./icons.js";
import { renderMoveList } from "./movelist.js";

const PLAY_INTERVAL_MS = 900;

/** "Alice (O) vs Scribbler (X)": the seats of a stored match, with their sides. */
export function seatNames(record, sides) {
  const bySeat = [null, null];
  for (const seat of record.seats ?? []) bySeat[seat.seat] = seat.player;
  return bySeat.map((player, seat) => (player ? `${player.name} (${sides[seat]})` : sides[seat]));
}

/** A stored move as people write it: its `display` (SAN, in chess), else its notation. */
const shown = (move) => move.display ?? move.move;

/** The seat the viewer played in a stored match, or null: the replay is seen from that side. */
export function viewerSeat(record, playerId) {
  if (!playerId) return null;
  return (record.seats ?? []).find((seat) => seat.player?.id === playerId)?.seat ?? null;
}

/** Whether a stored match is over (finished or aborted), rather than open or being played. */
const isOver = (record) => record.status === "finished" || record.status === "aborted";

/** The headline of a finished match: who won, or a draw, and why. */
export function resultText(record, names) {
  if (record.status === "aborted") return `Aborted: ${describeReason(record.reason, names)}`;
  if (record.status === "open") return "Not started: it waits for a second player.";
  if (record.status !== "finished") return "In progress: these are the moves so far.";
  const headline =
    record.winner === null || record.winner === undefined ? "Draw" : `${names[record.winner]} won`;
  return `${headline}: ${describeReason(record.reason, names)}`;
}

/** " — book: win in 12" or " — depth 9, +12, pv 4 4 3" for a bot move, "" for a person's. */
function searchSummary(engine, game) {
  if (typeof engine?.score !== "number") return "";
  return ` — ${describeEngine(engine, game)}`;
}

/** The "From" column: where a bot move came from. */
const SOURCE_NAMES = { book: "Book", solved: "Solver", searched: "Search" };

const ENGINE_COLUMNS = [
  "Ply",
  "Side",
  "Move",
  "From",
  "Bot's score",
  "Depth",
  "Nodes",
  "Time",
  "Principal variation",
];

export function mount(container, app, [matchId]) {
  let record = null;
  let ply = 0;
  let playing = null;
  let ui = null;
  let seat = null; // the viewer's seat, if they played this match: their side is at the bottom
  let mounted = true;

  replaceChildren(container, h("p", { class: "loading" }, "Loading the replay…"));

  function plies() {
    return record.moves.length;
  }

  function show(target) {
    ply = Math.max(0, Math.min(plies(), target));
    if (ply === plies()) stop();
    render();
  }

  function stop() {
    clearInterval(playing);
    playing = null;
  }

  function togglePlay() {
    if (playing) {
      stop();
    } else {
      if (ply === plies()) ply = 0;
      playing = setInterval(() => show(ply + 1), PLAY_INTERVAL_MS);
    }
    render();
  }

  /** ←/→ step, Home/End jump, wherever the focus is (the board only shows), but for a field's own keys. */
  function onKey(event) {
    if (!ui || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.target.closest?.("input, textarea, select")) return;
    const keys = {
      ArrowLeft: () => show(ply - 1),
      ArrowRight: () => show(ply + 1),
      Home: () => show(0),
      End: () => show(plies()),
    };
    if (keys[event.key]) {
      event.preventDefault();
      keys[event.key]();
    }
  }

  function botMoves() {
    return record.moves
      .map((move, index) => ({ ...move, ply: index + 1, engine: move.engine }))
      .filter((move) => move.engine && typeof move.engine.score === "number");
  }

  function engineTable(sides) {
    const rows = botMoves();
    return h(
      "div",
      { class: "table-scroll" },
      h(
        "table",
        { class: "engine-table" },
        h("caption", { class: "visually-hidden" }, "Search information of each bot move"),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ENGINE_COLUMNS.map((t) => h("th", { scope: "col" }, t)),
          ),
        ),
        h(
          "tbody",
          {},
          rows.map((move) => {
            const { depth, nodes } = engineFigures(move.engine);
            const row = h(
              "tr",
              { class: move.ply === ply ? "current" : "", "data-ply": move.ply },
              h(
                "td",
                {},
                h(
                  "button",
                  {
                    type: "button",
                    class: "link",
                    onclick: () => show(move.ply),
                    "aria-label": `Go to ply ${move.ply}`,
                  },
                  String(move.ply),
                ),
              ),
              h("td", {}, sides[move.seat]),
              h("td", {}, shown(move)),
              h("td", { class: "source" }, SOURCE_NAMES[move.engine.source] ?? "–"),
              h("td", {}, describeScore(move.engine.score, record.game)),
              h("td", {}, depth ?? "–"),
              h("td", {}, nodes === null ? "–" : formatNodes(nodes)),
              h("td", {}, typeof move.engine.time_ms === "number" ? `${move.engine.time_ms} ms` : "–"),
              h("td", { class: "pv" }, (move.engine.pv ?? []).join(" ") || "–"),
            );
            // Each cell names its column, for the narrow layout that stacks a row's cells (style.css).
            [...row.cells].forEach((cell, index) => cell.setAttribute("data-label", ENGINE_COLUMNS[index]));
            return row;
          }),
        ),
      ),
    );
  }

  function build(catalog, exportText) {
    const game = catalog.byName[record.game];
    const sides = game?.sides ?? ["First", "Second"];
    const names = seatNames(record, sides);
    const boardModule = boardFor(record.game);
    const board = new BoardView(boardModule, { sides, readOnly: true });
    const slider = h("input", {
      type: "range",
      id: "replay-ply",
      min: 0,
      max: plies(),
      value: 0,
      oninput: (event) => {
        stop();
        show(Number(event.target.value));
      },
    });
    const playButton = h("button", { type: "button", class: "primary", onclick: togglePlay });
    const control = (label, name, onclick) =>
      h(
        "button",
        { type: "button", class: "icon-button", "aria-label": label, title: label, onclick },
        icon(name),
      );
    ui = {
      sides,
      names,
      board,
      slider,
      playButton,
      position: h("span", { class: "ply-counter", "aria-live": "polite" }),
      moves: h("ol", { class: "move-list", "aria-label": "Moves" }),
      graph: h("div", { class: "graph-holder" }),
      engines: h("div", {}),
      current: h("p", { class: "current-move", "aria-live": "polite" }),
    };
    const exportBlock = exportBox(exportText);
    replaceChildren(
      container,
      h(
        "div",
        { class: `replay-view game-${record.game}` },
        h(
          "section",
          { class: "board-area", "aria-label": "Replay board" },
          h("h1", { class: "match-title" }, `${game?.title ?? record.game} replay`),
          h("p", { class: "players-line" }, `${names[0]} vs ${names[1]}`),
          h(
            "p",
            { class: "banner", "data-outcome": "neutral" },
            resultText(record, names),
            isOver(record)
              ? null
              : [
                  " ",
                  h(
                    "a",
                    { href: `/match/${encodeURIComponent(matchId)}`, "data-link": true },
                    "Go to the live match",
                  ),
                ],
          ),
          h("div", { class: "board-holder" }, board.element),
          ui.current,
          h(
            "div",
            { class: "replay-controls", role: "group", "aria-label": "Replay controls" },
            control("First position", "first", () => show(0)),
            control("Previous move", "previous", () => show(ply - 1)),
            playButton,
            control("Next move", "next", () => show(ply + 1)),
            control("Last position", "last", () => show(plies())),
            flipButton(board),
          ),
          h(
            "div",
            { class: "field slider" },
            h("label", { for: "replay-ply" }, "Jump to ply "),
            slider,
            ui.position,
          ),
          h(
            "section",
            // Only bots' moves carry search information: a game between people has nothing to graph.
            { class: "panel eval-panel", "aria-labelledby": "eval-title", hidden: !botMoves().length },
            h("h2", { id: "eval-title" }, "Bot evaluation"),
            ui.graph,
            ui.engines,
          ),
        ),
        h(
          "aside",
          { class: "side-panel" },
          h(
            "section",
            { class: "panel moves-panel", "aria-labelledby": "replay-moves-title" },
            h("h2", { id: "replay-moves-title" }, "Moves"),
            ui.moves,
          ),
          h(
            "section",
            { class: "panel", "aria-labelledby": "export-title" },
            h("h2", { id: "export-title" }, "Export"),
            exportBlock,
            h(
              "div",
              { class: "row" },
              h(
                "a",
                {
                  class: "button",
                  href: `/api/matches/${encodeURIComponent(matchId)}/export`,
                  download: "",
                  "aria-label": "Download the exported game",
                },
                "Download",
              ),
              h(
                "button",
                {
                  type: "button",
                  onclick: async () => {
                    try {
                      await navigator.clipboard.writeText(exportText);
                      app.toast("Export copied.");
                    } catch {
                      app.toast("Copying is not allowed here: select the text instead.", "error");
                    }
                  },
                },
                "Copy",
              ),
            ),
          ),
        ),
      ),
    );
  }

  function render() {
    const boards = record.boards ?? [];
    const grid = boards[ply] ?? boards.at(-1) ?? [];
    const move = ply > 0 ? record.moves[ply - 1] : null;
    ui.board.update({
      grid,
      legal: [],
      lastMove: move?.move ?? null,
      lastMoveDisplay: move?.display ?? null,
      seat,
      interactive: false,
    });
    const view = ui.board.element.closest(".replay-view");
    view.style.setProperty("--board-aspect", ui.board.aspect.toFixed(4)); // sizes the board (style.css)
    ui.slider.value = String(ply);
    ui.position.textContent = `${ply} / ${plies()}`;
    replaceChildren(ui.playButton, icon(playing ? "pause" : "play"), playing ? "Pause" : "Play");
    ui.playButton.setAttribute("aria-label", playing ? "Pause the replay" : "Play the replay");
    ui.current.textContent = move
      ? `Ply ${ply}: ${ui.sides[move.seat]} played ${shown(move)}${searchSummary(move.engine, record.game)}`
      : "Start position";
    renderMoveList(ui.moves, record.moves.map(shown), { current: ply, onSelect: show, sides: ui.sides });
    const points = botMoves().map((m) => ({ ply: m.ply, seat: m.seat, score: m.engine.score, engine: m.engine }));
    if (points.length) {
      replaceChildren(
        ui.graph,
        evalGraph({ points, plies: plies(), current: ply, sides: ui.sides, onSelect: show, game: record.game }),
      );
      replaceChildren(ui.engines, engineTable(ui.sides));
    }
  }

  async function start() {
    try {
      const [catalog, loaded, exportText] = await Promise.all([
        loadCatalog(),
        api.match(matchId),
        api.exportText(matchId).catch((e) => `(no export: ${e.message})`),
      ]);
      // A match still being played shows no bot's search, as its match page shows none: the bot's
      // opponent would read what the bot thinks of the position and what it means to play next.
      record = isOver(loaded)
        ? loaded
        : { ...loaded, moves: loaded.moves.map((move) => ({ ...move, engine: null })) };
      if (!mounted) return;
      seat = viewerSeat(record, app.identity?.playerId);
      build(catalog, exportText);
      document.title = `Replay · ${catalog.byName[record.game]?.title ?? record.game} · Ply Arena`;
      // `?ply=N` opens at ply N (0: the start position); without it, at the end.
      const asked = new URLSearchParams(location.search).get("ply");
      const initial = asked === null || asked.trim() === "" ? NaN : Number(asked);
      show(Number.isInteger(initial) && initial >= 0 ? initial : plies());
    } catch (error) {
      if (error.code === "not_found") {
        app.showProblem(
          container,
          "No such match",
          `There is no stored match "${matchId}" on this server: check the link, or the finished games.`,
        );
      } else {
        app.showProblem(container, "No replay", error.message);
      }
    }
  }

  document.addEventListener("keydown", onKey);
  start();
  return () => {
    mounted = false;
    stop();
    document.removeEventListener("keydown", onKey);
    document.title = "Ply Arena";
  };
}

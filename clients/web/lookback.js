/**
 * Looking back at an earlier position of a live match without leaving it: a click on a move in the
 * match's move list shows the board after that move, while the match goes on and its moves keep
 * arriving in the list; "Back to live" (or a click on the last move) shows the match as it is again.
 *
 * The match's events carry only its current board, so the boards of earlier plies come from the
 * stored match (`/api/matches/{id}`, which the replay reads too), fetched when first asked for.
 */

import { api } from "./api.js";
import { h } from "./dom.js";

export class LookBack {
  /**
   * @param {string} matchId
   * @param {{changed: () => void, failed: (message: string) => void}} handlers `changed` redraws the
   *   page; `failed` says why an earlier position could not be shown.
   */
  constructor(matchId, { changed, failed }) {
    this.matchId = matchId;
    this.handlers = { changed, failed };
    this.ply = null; // the ply shown, or null while the board is live
    this.boards = [];
    this.label = h("span", { class: "lookback-label" });
    this.element = h(
      "div",
      { class: "lookback", role: "status", hidden: true },
      this.label,
      h("button", { type: "button", class: "primary", onclick: () => this.backToLive() }, "Back to live"),
    );
  }

  get looking() {
    return this.ply !== null;
  }

  /** Shows the position after `ply` moves; the newest ply (`livePly`) is the live board. */
  async show(ply, livePly) {
    if (ply >= livePly) {
      this.backToLive();
      return;
    }
    if (!this.boards[ply]) {
      try {
        const record = await api.match(this.matchId);
        this.boards = record.boards ?? [];
      } catch (error) {
        this.handlers.failed(`Could not show that position: ${error.message}`);
        return;
      }
      if (!this.boards[ply]) return;
    }
    this.ply = ply;
    this.handlers.changed();
  }

  backToLive() {
    if (this.ply === null) return;
    this.ply = null;
    this.handlers.changed();
  }

  /**
   * What the board shows: `live` as it is, or the earlier position, which nobody can play on.
   * @param {object} live the state BoardView.update takes for the live board
   * @param {string[]} moves the moves in notation, and `display` as people write them (or null)
   */
  boardState(live, moves, display) {
    this.element.hidden = this.ply === null;
    if (this.ply === null) return live;
    const index = this.ply - 1;
    this.label.textContent =
      this.ply === 0 ? "Showing the start position." : `Showing the position after move ${this.ply}.`;
    return {
      ...live,
      grid: this.boards[this.ply],
      legal: [],
      lastMove: index >= 0 ? moves[index] : null,
      lastMoveDisplay: index >= 0 ? (display?.[index] ?? null) : null,
      interactive: false,
    };
  }

  /** The move list's options: its current move, and clicks that look back. */
  listOptions(livePly) {
    return { current: this.ply ?? livePly, onSelect: (ply) => this.show(ply, livePly) };
  }
}

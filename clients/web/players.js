/** The strip above or below the board for one seat: piece, name, side, presence, clock, turn. */

import { h, replaceChildren, svg } from "./dom.js";
import { botBadge } from "./icons.js";
import { profileLink } from "./profile.js";

export class PlayerStrip {
  constructor(seat, boardModule, clockFace) {
    this.seat = seat;
    const sample = svg("svg", { class: "swatch", viewBox: "0 0 100 100", "aria-hidden": "true" });
    sample.append(boardModule.drawPiece(boardModule.swatchPieces?.[seat] ?? (seat === 0 ? "x" : "o"), 100));
    this.name = h("span", { class: "name" });
    this.detail = h("span", { class: "detail" });
    this.turnMark = h("span", { class: "turn-mark" });
    this.notes = [];
    this.away = false;
    this.returnBy = null;
    this.countdown = null;
    this.element = h(
      "div",
      { class: `player-strip seat${seat}`, "data-seat": seat },
      h("span", { class: `swatch-holder board-${boardModule.name}` }, sample),
      h("span", { class: "who" }, this.name, this.detail),
      this.turnMark,
      clockFace,
    );
  }

  /**
   * @param {{player: {name: string, bot: boolean} | null, side: string, isYou: boolean,
   *          toMove: boolean, connected: boolean, returnBy?: number | null, thinking: boolean,
   *          count?: string | null}} view  `count` is e.g. "12 discs" where the game counts pieces;
   *   `returnBy` the `performance.now()` by which an absent player must be back, null when no time runs
   */
  update({ player, side, isYou, toMove, connected, returnBy = null, thinking, count }) {
    this.element.classList.toggle("to-move", toMove);
    this.element.classList.toggle("away", Boolean(player) && !connected);
    if (player)
      replaceChildren(this.name, profileLink(player, player.bot ? botBadge() : null), isYou ? " (you)" : null);
    else replaceChildren(this.name, "Waiting for a player…");
    this.notes = [side];
    if (count) this.notes.push(count);
    this.away = Boolean(player) && !connected;
    this.returnBy = this.away ? returnBy : null;
    this.#showDetail();
    this.turnMark.textContent = toMove ? (thinking ? "thinking…" : "to move") : "";
  }

  stop() {
    clearInterval(this.countdown);
    this.countdown = null;
  }

  #showDetail() {
    const notes = [...this.notes];
    if (this.away) notes.push(this.#absence());
    this.detail.textContent = notes.join(" · ");
    const counting = this.returnBy !== null && this.returnBy > performance.now();
    if (counting && !this.countdown) this.countdown = setInterval(() => this.#showDetail(), 250);
    if (!counting) this.stop();
  }

  /** "disconnected, 57 s to return", counting down while the grace period runs. */
  #absence() {
    if (this.returnBy === null) return "disconnected";
    const seconds = Math.ceil((this.returnBy - performance.now()) / 1000);
    return seconds > 0 ? `disconnected, ${seconds} s to return` : "disconnected, time is up";
  }
}

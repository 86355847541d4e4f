/** The strip above or below the board for one seat: piece, name, side, presence, clock, turn. */

import { h, replaceChildren, svg } from "./dom.js";
import { botBadge } from "./icons.js";

export class PlayerStrip {
  constructor(seat, boardModule, clockFace) {
    this.seat = seat;
    const sample = svg("svg", { class: "swatch", viewBox: "0 0 100 100", "aria-hidden": "true" });
    sample.append(boardModule.drawPiece(seat === 0 ? "x" : "o", 100));
    this.name = h("span", { class: "name" });
    this.detail = h("span", { class: "detail" });
    this.turnMark = h("span", { class: "turn-mark" });
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
   *          toMove: boolean, connected: boolean, graceMs?: number | null, thinking: boolean,
   *          count?: string | null}} view  `count` is e.g. "12 discs" where the game counts pieces
   */
  update({ player, side, isYou, toMove, connected, graceMs, thinking, count }) {
    this.element.classList.toggle("to-move", toMove);
    this.element.classList.toggle("away", Boolean(player) && !connected);
    if (player)
      replaceChildren(this.name, player.name, player.bot ? botBadge() : null, isYou ? " (you)" : null);
    else replaceChildren(this.name, "Waiting for a player…");
    const notes = [side];
    if (count) notes.push(count);
    if (player && !connected) {
      notes.push(graceMs ? `disconnected, ${Math.round(graceMs / 1000)} s to return` : "disconnected");
    }
    this.detail.textContent = notes.join(" · ");
    this.turnMark.textContent = toMove ? (thinking ? "thinking…" : "to move") : "";
  }
}

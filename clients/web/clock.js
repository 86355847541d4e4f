/**
 * Two chess-clock faces that count down between server updates.
 *
 * The server's clock is the truth: every update replaces the times it sent, read
 * "as of the moment the message arrived", and only the running seat's face counts
 * down from there, locally, until the next update. A face at zero says so but
 * decides nothing: the server calls the flag.
 */

import { h } from "./dom.js";

/** Under this much time left a clock shows red, and the player's own gives its warning sound. */
export const LOW_MS = 20_000;

export function formatClock(ms) {
  const clamped = Math.max(0, ms);
  const totalSeconds = Math.floor(clamped / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = String(totalSeconds % 60).padStart(2, "0");
  if (clamped < 10_000) return `${minutes}:${seconds}.${Math.floor((clamped % 1000) / 100)}`;
  return `${minutes}:${seconds}`;
}

export class ClockFaces {
  constructor(labels) {
    this.faces = labels.map((label) =>
      h("div", { class: "clock", role: "timer", "aria-label": label, "aria-live": "off" }, "–:––"),
    );
    this.times = null;
    this.running = null;
    this.since = 0;
    this.timer = null;
    this.onLow = null; // called with a seat whose running clock has just gone under LOW_MS
  }

  /**
   * Authoritative times (`null` for an untimed match), the seat whose clock runs, and when
   * (`performance.now()`) those times arrived; setting the same times again changes nothing.
   */
  set(timesMs, runningSeat, receivedAt = performance.now()) {
    this.times = timesMs ? [...timesMs] : null;
    this.running = runningSeat ?? null;
    this.since = receivedAt;
    this.#render();
    clearInterval(this.timer);
    this.timer = null;
    if (this.times && this.running !== null) this.timer = setInterval(() => this.#render(), 100);
  }

  /** The time `seat` has now, as this page estimates it. */
  remaining(seat) {
    if (!this.times) return null;
    const elapsed = seat === this.running ? performance.now() - this.since : 0;
    return Math.max(0, this.times[seat] - elapsed);
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  #render() {
    this.faces.forEach((face, seat) => {
      face.hidden = !this.times;
      if (!this.times) return;
      const left = this.remaining(seat);
      face.textContent = formatClock(left);
      face.classList.toggle("running", seat === this.running);
      const low = left < LOW_MS;
      if (low && !face.classList.contains("low") && seat === this.running && left > 0) this.onLow?.(seat);
      face.classList.toggle("low", low);
      face.classList.toggle("flagged", left <= 0);
    });
  }
}

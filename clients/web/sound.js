/**
 * The match page's sounds: a move, a capture, low time and the game's end, made on the spot with
 * the Web Audio API (no sound files to fetch or license), and a mute switch this browser remembers.
 *
 * Sounds wait for the person's first click or key on the page, as browsers ask: a page that plays
 * nothing before then also shows no warning about it.
 */

import { h } from "./dom.js";

const MUTED_KEY = "plyarena.muted";

/** Each cue as notes: [frequency in Hz, start in s, length in s, waveform, loudness 0-1]. */
const CUES = {
  move: [[620, 0, 0.07, "triangle", 0.35]],
  capture: [
    [520, 0, 0.06, "square", 0.12],
    [330, 0.05, 0.11, "triangle", 0.35],
  ],
  lowTime: [
    [880, 0, 0.09, "sine", 0.3],
    [880, 0.16, 0.09, "sine", 0.3],
  ],
  end: [
    [523, 0, 0.16, "triangle", 0.3],
    [659, 0.14, 0.16, "triangle", 0.3],
    [784, 0.28, 0.3, "triangle", 0.3],
  ],
};

function storedMuted() {
  try {
    return localStorage.getItem(MUTED_KEY) === "1";
  } catch {
    return false;
  }
}

/** How many pieces stand on a grid: fewer after a move means something was taken. */
const pieceTotal = (grid) => (grid ?? []).join("").replace(/[ .]/g, "").length;

export class Sounds {
  constructor() {
    this.muted = storedMuted();
    this.context = null;
    this.switches = new Set(); // each switch shows the cue asked for last, played or muted, as data-last-cue
  }

  /** Plays `cue` ("move", "capture", "lowTime" or "end") unless muted. */
  play(cue) {
    for (const button of this.switches) button.dataset.lastCue = cue;
    if (this.muted || !CUES[cue]) return;
    const context = this.#audio();
    if (!context) return;
    const start = context.currentTime + 0.01;
    for (const [frequency, at, length, type, loudness] of CUES[cue]) {
      const oscillator = context.createOscillator();
      const gain = context.createGain();
      oscillator.type = type;
      oscillator.frequency.value = frequency;
      // A quick rise and an exponential fall: a tap, not a click.
      gain.gain.setValueAtTime(0.0001, start + at);
      gain.gain.exponentialRampToValueAtTime(loudness, start + at + 0.01);
      gain.gain.exponentialRampToValueAtTime(0.0001, start + at + length);
      oscillator.connect(gain).connect(context.destination);
      oscillator.start(start + at);
      oscillator.stop(start + at + length + 0.02);
    }
  }

  /** The sound of a match event, given the grid before it and after: a move, a capture, the end. */
  cueFor(event, before, after) {
    if (event.type === "moved") this.play(pieceTotal(after) < pieceTotal(before) ? "capture" : "move");
    else if (event.type === "ended") this.play("end");
  }

  setMuted(muted) {
    this.muted = muted;
    try {
      localStorage.setItem(MUTED_KEY, muted ? "1" : "0");
    } catch {
      // Storage refused (a private window's quota): muted for this page only.
    }
    for (const button of this.switches) this.#showSwitch(button);
  }

  /** A "Mute sounds" toggle button (pressed: muted) in step with every other one on the page. */
  muteSwitch() {
    const button = h(
      "button",
      { type: "button", class: "mute-switch", onclick: () => this.setMuted(!this.muted) },
      "Mute sounds",
    );
    this.switches.add(button);
    this.#showSwitch(button);
    return button;
  }

  /** Forgets a page's switches when the page goes. */
  release() {
    this.switches.clear();
  }

  #showSwitch(button) {
    button.setAttribute("aria-pressed", String(this.muted));
  }

  /** The audio context, made on the first sound after the person has used the page; null before. */
  #audio() {
    if (!this.context) {
      if (navigator.userActivation && !navigator.userActivation.hasBeenActive) return null;
      const Context = window.AudioContext ?? window.webkitAudioContext;
      if (!Context) return null;
      this.context = new Context();
    }
    if (this.context.state === "suspended") this.context.resume().catch(() => {});
    return this.context;
  }
}

/** The one set of sounds of this browser tab: its mute switch and audio context outlive a page. */
export const sounds = new Sounds();

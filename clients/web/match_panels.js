/**
 * The parts of the match page that only read the match: which actions a player
 * has now, the turn line, the result banner and the link to share. Each is a
 * function of the model (match_model.js), so match.js only wires them up.
 */

import { describeReason } from "./catalog.js";
import { h, replaceChildren } from "./dom.js";

function button(label, onclick, options = {}) {
  return h("button", { type: "button", onclick, ...options }, label);
}

function link(label, href, className = "button") {
  return h("a", { class: className, href, "data-link": true }, label);
}

/** A resign button that asks once more before it acts, for four seconds. */
export class ResignButton {
  constructor(resign, changed) {
    this.resign = resign;
    this.changed = changed;
    this.timer = null;
  }

  element() {
    const armed = this.timer !== null;
    return button(armed ? "Really resign?" : "Resign", () => this.#press(), {
      class: armed ? "danger" : null,
      "aria-label": armed ? "Confirm resigning" : "Resign",
    });
  }

  disarm() {
    clearTimeout(this.timer);
    this.timer = null;
  }

  #press() {
    if (this.timer !== null) {
      this.disarm();
      this.resign();
    } else {
      this.timer = setTimeout(() => {
        this.timer = null;
        this.changed();
      }, 4000);
    }
    this.changed();
  }
}

/**
 * The actions open to the viewer now, as buttons and links.
 * @param {import("./match_model.js").MatchModel} model
 * @param {{matchId: string, sides: string[], sending: object | null, resign: ResignButton,
 *          act: (type: string) => void, move: (move: string) => void, join: (seat: number) => void}} options
 */
export function controlsFor(model, { matchId, sides, sending, resign, act, move, join }) {
  const { state } = model;
  const me = model.mySeat;
  const controls = [];
  const rematchHref = model.newMatchId ? `/match/${encodeURIComponent(model.newMatchId)}` : null;
  if (me !== null) {
    const opponent = 1 - me;
    if (model.myTurn && state.legal.includes("pass")) {
      controls.push(button("Pass", () => move("pass"), { class: "primary", disabled: Boolean(sending) }));
    }
    if (state.status === "live") {
      if (state.draw_offer === opponent) {
        controls.push(button("Accept draw", () => act("draw.accept"), { class: "primary" }));
        controls.push(button("Decline draw", () => act("draw.decline")));
      } else if (state.draw_offer === me) {
        controls.push(button("Draw offered", null, { disabled: true }));
      } else {
        controls.push(button("Offer draw", () => act("draw.offer")));
      }
      controls.push(...takebackControls(model, act));
      controls.push(resign.element());
    }
    if (state.status === "open" || (state.status === "live" && model.ply < 2)) {
      controls.push(button("Abort", () => act("abort")));
    }
    // During the game only an opponent's standing offer (or an agreed rematch) shows: agreed then, the
    // rematch starts as the game ends.
    const rematchAsked = Number.isInteger(state.rematch_offer) || Boolean(state.rematch_agreed);
    if ((model.isOver || (state.status === "live" && rematchAsked)) && state.seats.every(Boolean)) {
      if (rematchHref) {
        controls.push(link("Go to the rematch", rematchHref, "button primary"));
      } else if (model.isOver && state.connected?.[opponent] === false) {
        // After the game, presence says whether the opponent is still there to answer an offer.
        const who = state.seats[opponent].name;
        controls.push(h("p", { class: "controls-note" }, `${who} has left: no rematch.`));
      } else if (state.rematch_agreed) {
        controls.push(button("Rematch agreed", null, { disabled: true }));
        controls.push(button("Cancel rematch", () => act("rematch.decline")));
      } else if (state.rematch_offer === opponent) {
        controls.push(button("Accept rematch", () => act("rematch.accept"), { class: "primary" }));
        controls.push(button("Decline rematch", () => act("rematch.decline")));
      } else if (state.rematch_offer === me) {
        controls.push(button("Rematch offered", null, { disabled: true }));
      } else {
        controls.push(button("Rematch", () => act("rematch.offer"), { class: "primary" }));
      }
    }
  } else if (rematchHref) {
    controls.push(link("Watch the rematch", rematchHref));
  } else if (state.status === "open" && !state.options?.bot) {
    const free = state.seats.findIndex((player) => !player);
    if (free >= 0) controls.push(button(`Join as ${sides[free]}`, () => join(free), { class: "primary" }));
  }
  if (model.isOver) controls.push(link("Replay", `/replay/${encodeURIComponent(matchId)}`));
  controls.push(link("Lobby", "/"));
  return controls;
}

/**
 * The takeback buttons of a player in a live game: answer the opponent's request, or ask to take back
 * your last move once you have made one (in a rated game between people, only until the opponent has
 * moved twice; the server says so too).
 */
function takebackControls(model, act) {
  const { state } = model;
  const me = model.mySeat;
  const opponent = 1 - me;
  if (state.takeback_offer === opponent) {
    return [
      button("Accept takeback", () => act("takeback.accept"), { class: "primary" }),
      button("Decline takeback", () => act("takeback.decline")),
    ];
  }
  if (state.takeback_offer === me) return [button("Takeback asked", null, { disabled: true })];
  // Seat 0 moves first and the seats alternate: a seat's moves are every other ply.
  const movesOf = (seat) => Math.floor((model.ply + 1 - seat) / 2);
  const people = state.seats.every((player) => player && !player.bot);
  const barred = Boolean(state.options?.rated) && people && movesOf(opponent) >= 2;
  if (movesOf(me) === 0 || barred) return [];
  const label = "Ask to take back your last move";
  return [button("Takeback", () => act("takeback.offer"), { "aria-label": label, title: label })];
}

/** How many watch, for the line under the board ("" when no one does). */
export function spectatorText(model) {
  const count = model.state.spectators ?? 0;
  if (count <= 0) return "";
  return count === 1 ? "1 spectator" : `${count} spectators`;
}

/** One line on whose turn it is, or what the match waits for. */
export function turnText(model, { names, sides, sending }) {
  const { state } = model;
  if (state.status === "open") {
    const bot = state.options?.bot;
    if (bot) return `Waiting for a level ${bot.level} bot to sit down…`;
    // The link shows under the board on a phone, beside it on a wide screen: say what, not where.
    if (model.mySeat !== null) return "Waiting for an opponent: share the link to this match.";
    // A visitor (often by a private link): the free seat is theirs to take.
    const free = state.seats.findIndex((player) => !player);
    if (free < 0) return "Waiting for the match to start…";
    const host = state.seats[1 - free]?.name ?? "A player";
    return `${host} is waiting for an opponent: join as ${sides[free]} to play.`;
  }
  if (state.status !== "live") return "";
  const mover = state.seats[state.turn];
  if (sending) return `Sending ${sending.move}…`;
  if (model.myTurn) return `Your turn (${sides[state.turn]}).`;
  if (mover?.bot) return `${names[state.turn]} is thinking…`;
  return `${names[state.turn]} to move.`;
}

/** Fills `banner` with the result once the match is over (and hides it before). */
export function showResult(banner, model, names) {
  const result = model.isOver ? model.state.result : null;
  banner.hidden = !result;
  if (!result) return;
  const { winner, reason, status } = result;
  const me = model.mySeat;
  let headline = `${names[winner]} wins`;
  let outcome = "neutral";
  if (status === "aborted" || winner === null) {
    headline = status === "aborted" ? "Match aborted" : "Draw";
    outcome = "draw";
  } else if (me !== null) {
    headline = winner === me ? "You won!" : "You lost";
    outcome = winner === me ? "win" : "loss";
  }
  banner.dataset.outcome = outcome;
  // A player reads about themselves as "you": "You ran out of time", "aborted by you".
  const told = names.map((name, seat) => (seat === me ? "you" : name));
  const why = describeReason(reason, told).replace(/^you\b/, "You");
  replaceChildren(banner, h("strong", {}, headline), h("span", {}, why));
}

/** The link to an open match its creator waits in, with a copy button; nothing otherwise. */
export function shareLink(model, matchId, toast) {
  const { state } = model;
  if (state.status !== "open" || state.options?.bot || model.mySeat === null) return [];
  const url = `${location.origin}/match/${encodeURIComponent(matchId)}`;
  const input = h("input", { id: "share-link", readonly: true, value: url });
  const copy = async () => {
    input.select();
    try {
      await navigator.clipboard.writeText(url);
      toast("Link copied.");
    } catch {
      toast("Copying is not allowed here: the link is selected, copy it yourself.");
    }
  };
  const label =
    state.options?.visibility === "private" ? "Private link: send it to your opponent" : "Link to this match";
  return [
    h("label", { for: "share-link" }, label),
    h("div", { class: "row" }, input, button("Copy", copy, { "aria-label": "Copy the link to this match" })),
  ];
}

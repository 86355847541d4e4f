/**
 * A followed match as data: the last full `match.state`, with every numbered event
 * after it applied in order.
 *
 * Sequence numbers make following exact: an event at or below the current `seq`
 * is a repeat and is ignored; an event past `seq + 1` means something was missed,
 * and `apply` says so, so the view can ask for a catch-up instead of guessing.
 * The server sends the board, the legal moves and whose turn it is with every
 * state and move, so nothing here knows any game's rules.
 */

export class MatchModel {
  constructor() {
    this.state = null;
    this.chat = [];
    this.newMatchId = null;
  }

  get ready() {
    return this.state !== null;
  }

  /** Replaces everything with a full `match.state`. */
  reset(state) {
    const previous = this.state;
    const sameLog = previous?.log === state.log;
    this.state = {
      ...state,
      board: state.board ?? [],
      legal: state.legal ?? [],
      last_move: state.last_move ?? state.moves.at(-1) ?? null,
      display: state.display ?? null, // the moves as people write them, in a game that has such (chess)
      takeback_offer: state.takeback_offer ?? null, // (left out when no one asks)
      spectators: state.spectators ?? 0,
      engines: [],
      clocksAt: performance.now(),
      // When an absent player must be back by: the state says how long is left (an older server does
      // not, and then a countdown already running goes on).
      returnBy: [0, 1].map((seat) => {
        const left = state.grace_left_ms?.[seat];
        if (typeof left === "number") return performance.now() + left;
        return sameLog && state.connected?.[seat] === false ? (previous.returnBy[seat] ?? null) : null;
      }),
    };
    this.chat = mergeChat(sameLog ? this.chat : [], state.chat ?? []);
    this.newMatchId = state.rematch_id ?? this.newMatchId;
  }

  /**
   * Applies one numbered event.
   * @returns {"applied" | "duplicate" | "gap"}
   */
  apply(event) {
    const state = this.state;
    if (!state || event.seq <= state.seq) return "duplicate";
    if (event.seq !== state.seq + 1) return "gap";
    state.seq = event.seq;
    if ("clocks_ms" in event) state.clocksAt = performance.now();
    switch (event.type) {
      case "seated":
        state.seats = state.seats.map((player, seat) => (seat === event.seat ? event.player : player));
        // Sitting down is being there: the server marks a seat present when it is taken.
        state.connected = state.connected.map((on, seat) => (seat === event.seat ? true : on));
        break;
      case "started":
        state.status = "live";
        state.turn = event.turn ?? 0;
        state.clocks_ms = event.clocks_ms;
        state.clock_running = event.clocks_ms ? state.turn : null;
        if (event.board) state.board = event.board;
        if (event.legal) state.legal = event.legal;
        break;
      case "moved":
        state.moves = [...state.moves, event.move];
        if (state.display) state.display = [...state.display, event.display ?? event.move];
        state.engines[event.ply] = event.engine ?? null;
        state.last_move = event.last_move ?? event.move;
        state.turn = event.turn ?? 1 - event.seat;
        state.clocks_ms = event.clocks_ms;
        state.clock_running = event.clocks_ms ? state.turn : null;
        state.board = event.board ?? state.board;
        state.legal = event.legal ?? [];
        if (state.draw_offer === 1 - event.seat) state.draw_offer = null;
        state.takeback_offer = null; // a move lets a takeback request lapse
        break;
      case "takeback.offered":
        state.takeback_offer = event.seat;
        break;
      case "takeback.declined":
        state.takeback_offer = null;
        break;
      case "takeback.accepted":
        // The moves from `ply` on are gone; the event says what the position and the clocks are now.
        state.moves = state.moves.slice(0, event.ply);
        if (state.display) state.display = state.display.slice(0, event.ply);
        state.engines = state.engines.slice(0, event.ply);
        state.last_move = state.moves.at(-1) ?? null;
        state.turn = event.turn;
        state.clocks_ms = event.clocks_ms;
        state.clock_running = event.clocks_ms ? event.turn : null;
        state.board = event.board ?? state.board;
        state.legal = event.legal ?? [];
        state.takeback_offer = null;
        state.draw_offer = null;
        break;
      case "draw.offered":
        state.draw_offer = event.seat;
        break;
      case "draw.declined":
        state.draw_offer = null;
        break;
      case "rematch.offered":
        state.rematch_offer = event.seat;
        break;
      case "rematch.declined":
        state.rematch_offer = null;
        state.rematch_agreed = false;
        break;
      case "rematch.agreed":
        state.rematch_offer = null;
        state.rematch_agreed = true;
        break;
      case "rematch.started":
        state.rematch_offer = null;
        state.rematch_agreed = false;
        state.connected = [false, false]; // the players went on to the rematch
        this.newMatchId = event.new_match_id;
        break;
      case "chat":
        this.chat.push({ seq: event.seq, seat: event.seat, name: event.name, text: event.text });
        break;
      case "presence": {
        state.connected = state.connected.map((on, seat) => (seat === event.seat ? event.connected : on));
        // Counted from the notice's arrival: the server counts from the player's leaving, a moment earlier.
        const returnBy = !event.connected && event.grace_ms ? performance.now() + event.grace_ms : null;
        state.returnBy = state.returnBy.map((time, seat) => (seat === event.seat ? returnBy : time));
        break;
      }
      case "ended":
        state.status = event.status;
        state.result = { status: event.status, winner: event.winner, reason: event.reason };
        state.turn = null;
        state.legal = [];
        state.draw_offer = null;
        state.takeback_offer = null;
        state.rematch_agreed = false; // it starts now (rematch.started follows) or has lapsed
        state.clocks_ms = event.clocks_ms;
        state.clock_running = null;
        state.returnBy = [null, null]; // nobody has anything to come back to
        break;
      default:
        break; // an event type newer than this client: its seq still counts
    }
    return "applied";
  }

  /** The seat whose move it is, or null when nobody is to move. */
  get turn() {
    return this.state?.status === "live" ? this.state.turn : null;
  }

  get ply() {
    return this.state?.moves.length ?? 0;
  }

  get mySeat() {
    return this.state?.you ?? null;
  }

  get isOver() {
    return this.state?.status === "finished" || this.state?.status === "aborted";
  }

  get myTurn() {
    return this.mySeat !== null && this.turn === this.mySeat;
  }
}

/**
 * The chat lines of a new full state added to those already shown, each once and in order: the state
 * carries only the latest lines (and none from an older server), the page may hold earlier ones.
 */
function mergeChat(shown, fromState) {
  const bySeq = new Map(shown.map((line) => [line.seq, line]));
  for (const line of fromState) bySeq.set(line.seq, line);
  return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * The bots' opinion of a game, ply by ply, as an SVG graph.
 *
 * Each bot move stores its search score from the mover's point of view (negamax);
 * the graph turns every score to seat 0's point of view, so up is good for the
 * first side and down for the second. A won or lost game the search saw to its
 * end (a score within MAX_PLY of WIN, the bots' scale) sits on the edge; other
 * scores are squashed with s / (|s| + k), `k` the typical size of this game's
 * evaluations, so ordinary advantages spread over the middle of the graph.
 *
 * A bot also says where each move came from (`source`): its opening book, an exact
 * solver, or a depth-limited search. Only the figures that source has are shown.
 */

import { svg } from "./dom.js";

const WIDTH = 560;
const HEIGHT = 170;
const PAD = { left: 10, right: 10, top: 24, bottom: 24 };

const WIN = 1_000_000;
const MAX_PLY = 10_000;

export const isDecisive = (score) => Math.abs(score) > WIN - MAX_PLY;

/** Games whose solved endings rank wins by the final margin (bots/othello_endgame.py): a win by m
 * discs scores WIN - most + m, where most is the widest margin the board allows. */
const MARGIN_GAMES = { othello: 64 };

/** A person's reading of a score: "win in 3", "loss in 4", "win by 6 discs" or "+12". */
export function describeScore(score, game = null) {
  if (!isDecisive(score)) return formatScore(score);
  const result = score > 0 ? "win" : "loss";
  const most = MARGIN_GAMES[game];
  if (most !== undefined) return `${result} by ${Math.abs(score) - (WIN - most)} discs`;
  return `${result} in ${WIN - Math.abs(score)}`;
}

/** A typical evaluation size for the squash: the upper quartile of |score|, at least 1. */
function scale(scores) {
  const sizes = scores
    .filter((score) => !isDecisive(score))
    .map(Math.abs)
    .sort((a, b) => a - b);
  if (!sizes.length) return 1;
  return Math.max(1, sizes[Math.floor(sizes.length * 0.75)]);
}

/** The score of a bot move from seat 0's point of view. */
export function scoreForFirstSeat(point) {
  return point.seat === 0 ? point.score : -point.score;
}

export function formatScore(score) {
  return score > 0 ? `+${score}` : String(score);
}

/**
 * The depth and node count a bot move can have, by its source: a book move was looked up (neither),
 * a solved one saw every line to the end (no depth); `null` where there is none, whatever was sent.
 */
export function engineFigures(engine) {
  const looked = engine.source === "book";
  const solved = engine.source === "solved";
  return {
    depth: looked || solved ? null : (engine.depth ?? null),
    nodes: looked ? null : (engine.nodes ?? null),
  };
}

/** "48,211" or "1.2 M": a node count as people read it. */
export function formatNodes(nodes) {
  return nodes >= 1_000_000 ? `${(nodes / 1_000_000).toFixed(1)} M` : nodes.toLocaleString("en");
}

/**
 * What a bot said of its move, for people: "book: win in 12", "solved: loss in 29 (1.2 M nodes,
 * 85 ms)", or a search's "depth 9, +35, pv 4 4 3 (48,211 nodes, 400 ms)" (with no source said, the
 * same without what is missing).
 */
export function describeEngine(engine, game = null) {
  const score = typeof engine.score === "number" ? describeScore(engine.score, game) : "no score";
  if (engine.source === "book") return `book: ${score}`;
  const { depth, nodes } = engineFigures(engine);
  const costs = [];
  if (typeof nodes === "number") costs.push(`${formatNodes(nodes)} nodes`);
  if (typeof engine.time_ms === "number") costs.push(`${engine.time_ms.toLocaleString("en")} ms`);
  const cost = costs.length ? ` (${costs.join(", ")})` : "";
  if (engine.source === "solved") return `solved: ${score}${cost}`;
  const parts = typeof depth === "number" ? [`depth ${depth}`, score] : [score];
  if (engine.pv?.length) parts.push(`pv ${engine.pv.join(" ")}`);
  return `${parts.join(", ")}${cost}`;
}

/**
 * @param {{points: {ply: number, seat: number, score: number, engine: object}[],
 *          plies: number, current: number, sides: string[], onSelect?: (ply: number) => void,
 *          game?: string}} options
 *   `ply` of a point is the number of moves played once the scored move is on the board (1 = first move);
 *   `engine` is what the bot said of it, as the API gives it.
 * @returns {SVGSVGElement}
 */
export function evalGraph({ points, plies, current, sides, onSelect, game = null }) {
  const scored = points.filter((point) => typeof point.score === "number");
  const k = scale(scored.map(scoreForFirstSeat));
  const innerWidth = WIDTH - PAD.left - PAD.right;
  const innerHeight = HEIGHT - PAD.top - PAD.bottom;
  const midY = PAD.top + innerHeight / 2;
  const x = (ply) => PAD.left + (plies > 0 ? (ply / plies) * innerWidth : 0);
  const squash = (score) => (isDecisive(score) ? Math.sign(score) : score / (Math.abs(score) + k));
  const y = (score) => midY - squash(score) * (innerHeight / 2);

  const last = scored.at(-1);
  const summary = last
    ? `Bot evaluation over ${scored.length} bot moves; ` +
      `last: ${describeScore(scoreForFirstSeat(last), game)} for ${sides[0]}`
    : "No bot evaluations in this game";
  const graph = svg("svg", {
    class: "eval-graph",
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "img",
    "aria-label": summary,
  });
  graph.append(
    svg("rect", { class: "eval-bg", x: 0, y: 0, width: WIDTH, height: HEIGHT, rx: 8 }),
    svg("rect", { class: "eval-lower", x: PAD.left, y: midY, width: innerWidth, height: innerHeight / 2 }),
    svg("line", { class: "eval-axis", x1: PAD.left, y1: midY, x2: WIDTH - PAD.right, y2: midY }),
    svg("text", { class: "eval-label", x: PAD.left + 4, y: PAD.top - 8 }, `${sides[0]} better ↑`),
    svg("text", { class: "eval-label", x: PAD.left + 4, y: HEIGHT - 8 }, `${sides[1]} better ↓`),
  );
  if (scored.length) {
    const line = scored.map((point) => `${x(point.ply)},${y(scoreForFirstSeat(point))}`);
    const first = scored[0].ply;
    const last = scored.at(-1).ply;
    graph.append(
      svg("polygon", {
        class: "eval-area",
        points: [`${x(first)},${midY}`, ...line, `${x(last)},${midY}`].join(" "),
      }),
      svg("polyline", { class: "eval-line", points: line.join(" ") }),
    );
    for (const point of scored) {
      const score = scoreForFirstSeat(point);
      const detail = [`ply ${point.ply} (${sides[point.seat]}): ${describeScore(score, game)} for ${sides[0]}`];
      const { depth } = engineFigures(point.engine);
      if (point.engine.source === "book" || point.engine.source === "solved") detail.push(point.engine.source);
      else if (typeof depth === "number") detail.push(`depth ${depth}`);
      if (point.engine.source !== "book" && point.engine.pv?.length) detail.push(`pv ${point.engine.pv.join(" ")}`);
      graph.append(
        svg(
          "circle",
          {
            class: `eval-point seat${point.seat}`,
            cx: x(point.ply),
            cy: y(score),
            r: 5,
            "data-ply": point.ply,
          },
          svg("title", {}, detail.join(", ")),
        ),
      );
    }
  }
  graph.append(
    svg("line", {
      class: "eval-cursor",
      x1: x(current),
      y1: PAD.top - 4,
      x2: x(current),
      y2: HEIGHT - PAD.bottom + 4,
    }),
  );
  if (onSelect && plies > 0) {
    graph.addEventListener("click", (event) => {
      const box = graph.getBoundingClientRect();
      const fraction = ((event.clientX - box.left) / box.width) * WIDTH;
      const ply = Math.round(((fraction - PAD.left) / innerWidth) * plies);
      onSelect(Math.min(plies, Math.max(0, ply)));
    });
  }
  return graph;
}

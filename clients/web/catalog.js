/**
 * What the server offers: its games (title, side names, notation) and the bot
 * levels of each, from `/api/games` and `/api/bots`, in one shape for the views.
 */

import { api } from "./api.js";
import { BOARDS } from "./boards/index.js";

/** Simplest first; a game the server adds later goes after these, by title. */
const ORDER = ["tictactoe", "connect4", "othello", "checkers", "chess"];

/**
 * @typedef {{name: string, title: string, sides: string[], notation: string}} GameInfo
 * @typedef {{elo: number, ci_low: number, ci_high: number, games: number}} BotRating
 * @typedef {{level: number, name: string, description: string, style: string, available: boolean,
 *            rating: BotRating | null}} BotLevel
 * @returns {Promise<{games: GameInfo[], byName: Record<string, GameInfo>,
 *                    levels: Record<string, BotLevel[]> | null}>} `levels` is null when the server
 *   could not say which bots are on offer.
 */
export async function loadCatalog() {
  const [gamesReply, botsReply] = await Promise.all([api.games(), api.bots().catch(() => null)]);
  const listed = Array.isArray(gamesReply) ? gamesReply : gamesReply.games;
  const rank = (game) => (ORDER.includes(game.name) ? ORDER.indexOf(game.name) : ORDER.length);
  const known = [...listed].sort((a, b) => rank(a) - rank(b) || a.title.localeCompare(b.title));
  const byName = Object.fromEntries(known.map((game) => [game.name, game]));
  // Offered in the forms only where this client can draw the board: a game the server plays before the
  // client has its board is named in the lobby but not offered.
  const games = known.filter((game) => game.name in BOARDS);
  return { games, byName, levels: botsReply ? offeredLevels(botsReply) : null };
}

/**
 * The bot levels on offer per game, from `/api/bots` (docs/protocol.md): one row per level and
 * style that some running fleet offers, `available` false while every such fleet is full.
 */
export function offeredLevels(reply) {
  const games = reply?.games ?? {};
  return Object.fromEntries(
    Object.entries(games).map(([game, rows]) => [game, [...rows].sort((a, b) => a.level - b.level)]),
  );
}

/** A result reason with "seat 0" / "seat 1" told as the side or player that it means. */
export function describeReason(reason, names) {
  return String(reason ?? "").replace(/\bseat ([01])\b/g, (_, seat) => names[Number(seat)] ?? `seat ${seat}`);
}

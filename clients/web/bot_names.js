/**
 * Bots by the names of their levels: a bot's seat shows "Perfect · level 8" rather than the name it
 * plays under (`alphabeta-c4-L8`), from the levels that running fleets offer (`/api/bots`, catalog.js).
 */

/** The name to show for `player` in a match of `game`, given the catalog's `levels` (null if unknown). */
export function shownName(player, game, levels) {
  if (!player?.bot) return player?.name ?? "";
  const row = (levels?.[game] ?? []).find((level) => level.player === player.name);
  if (row) return `${row.name} · level ${row.level}`;
  const level = /-L(\d+)$/.exec(player.name); // no fleet offers it now: the level its name says
  return level ? `Bot · level ${level[1]}` : player.name;
}

/** `player` under the name to show (`null`, a free seat, stays `null`). */
export function shownPlayer(player, game, levels) {
  return player ? { ...player, name: shownName(player, game, levels) } : player;
}

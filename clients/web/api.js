/**
 * The server's JSON HTTP API (`/api/...`), for what needs no live connection:
 * the games and bot levels offered, finished matches, full records and exports.
 */

async function getJson(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  if (!response.ok) {
    let detail = response.statusText;
    try {
      const body = await response.json();
      detail = body.message ?? body.error ?? detail;
    } catch {
      // not JSON: keep the status text
    }
    throw new Error(`${path}: ${response.status} ${detail}`);
  }
  return response.json();
}

const once = new Map();

/** Fetches `path` once per page load (games and bot levels do not change while the server runs). */
function cached(path) {
  if (!once.has(path)) {
    const promise = getJson(path);
    promise.catch(() => once.delete(path));
    once.set(path, promise);
  }
  return once.get(path);
}

export const api = {
  games: () => cached("/api/games"),
  bots: () => cached("/api/bots"),
  /** @param {{game?: string, status?: string, player?: string, limit?: number, before?: string}} filters */
  matches(filters = {}) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filters)) {
      if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
    }
    const suffix = query.size ? `?${query}` : "";
    return getJson(`/api/matches${suffix}`);
  },
  match: (id) => getJson(`/api/matches/${encodeURIComponent(id)}`),
  async exportText(id) {
    const response = await fetch(`/api/matches/${encodeURIComponent(id)}/export`);
    if (!response.ok) throw new Error(`export of ${id}: ${response.status} ${response.statusText}`);
    return response.text();
  },
};

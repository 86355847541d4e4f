/**
 * The server's JSON HTTP API (`/api/...`), for what needs no live connection:
 * the games and bot levels offered, finished matches, full records and exports.
 */

import { loadIdentity } from "./identity.js";

/** A refusal from the HTTP API, with the server's error code and message (docs/protocol.md). */
export class ApiError extends Error {
  constructor(path, status, code, message) {
    super(message);
    this.path = path;
    this.status = status;
    this.code = code;
  }
}

/** The error a failed answer carries (`{"error": {"code", "message"}}`), or one made of its status. */
async function apiError(path, response) {
  let error = null;
  try {
    error = (await response.json())?.error ?? null;
  } catch {
    // not JSON (a proxy's error page): the status is all there is
  }
  const message = error?.message ?? `${path}: ${response.status} ${response.statusText}`;
  return new ApiError(path, response.status, error?.code ?? null, message);
}

/** GETs JSON; with `token`, as the player it belongs to (who may see its own private matches). */
async function getJson(path, token = null) {
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(path, { headers });
  if (!response.ok) throw await apiError(path, response);
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
  /** Public matches, and this browser's player's private ones: the list is asked with its token. */
  async matches(filters = {}) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filters)) {
      if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
    }
    const path = `/api/matches${query.size ? `?${query}` : ""}`;
    const token = loadIdentity()?.token;
    try {
      return await getJson(path, token);
    } catch (error) {
      // A token this server does not know (its database was reset): the public list, as anyone gets.
      if (token && error.code === "bad_token") return getJson(path);
      throw error;
    }
  },
  match: (id) => getJson(`/api/matches/${encodeURIComponent(id)}`),
  /** A player's profile (`name`, or `id:` and an id); `filters` pick and page its games. */
  profile(name, filters = {}) {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(filters)) {
      if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
    }
    return getJson(`/api/players/${encodeURIComponent(name)}${query.size ? `?${query}` : ""}`);
  },
  async exportText(id) {
    const path = `/api/matches/${encodeURIComponent(id)}/export`;
    const response = await fetch(path);
    if (!response.ok) throw await apiError(path, response);
    return response.text();
  },
};

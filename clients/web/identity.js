/**
 * Who this browser is: the name picked and the secret token the server gave for it.
 *
 * Kept in localStorage so a reload (or a new tab) comes back as the same player
 * and keeps the seats that player holds. The token is never shown or sent anywhere
 * but to our own server: in `hello`, and as the bearer of its match lists (api.js).
 */

const KEY = "plyarena.identity";

/** @returns {{name: string, token?: string, playerId?: string} | null} */
export function loadIdentity() {
  try {
    const stored = JSON.parse(localStorage.getItem(KEY) ?? "null");
    return stored && typeof stored.name === "string" ? stored : null;
  } catch {
    return null;
  }
}

export function saveIdentity(identity) {
  localStorage.setItem(KEY, JSON.stringify(identity));
}

export function forgetIdentity() {
  localStorage.removeItem(KEY);
}

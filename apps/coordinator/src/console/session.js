// The operator's admin token: kept in this tab's sessionStorage only (gone when the tab closes),
// sent as `Authorization: Bearer`, never put in a URL, a log line or the page.

const KEY = 'sluice.console.token';

export function getToken() {
  return sessionStorage.getItem(KEY);
}

export function hasToken() {
  return getToken() !== null;
}

export function setToken(token) {
  sessionStorage.setItem(KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(KEY);
}

/**
 * The request headers that carry the token (none when the operator entered an empty one).
 * @returns {Record<string, string>}
 */
export function authHeaders() {
  const token = getToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

// The public API, called with the signed-in user's own token, and the sign-in itself.
//
// The token lives in sessionStorage only: gone when the tab closes, never in local storage,
// a cookie or a URL. The page's Content-Security-Policy lets no script but the console's own
// run, so no other site's script can read it.

const TOKEN = 'longrun.console.token';
const PKCE = 'longrun.console.pkce';
const CONSOLE = '/console/';

// consolePath is the console's own path, ending in /console/ (a stage prefix kept).
export function consolePath() {
  const p = location.pathname;
  const i = p.lastIndexOf(CONSOLE);
  return i >= 0 ? p.slice(0, i + CONSOLE.length) : CONSOLE;
}

// apiBase is the API's base path on this origin: the path before /console/, then /v1.
export function apiBase() {
  return consolePath().slice(0, -CONSOLE.length) + '/v1';
}

// consoleURL is the console's URL without query or fragment: Cognito's redirect URI.
export function consoleURL() {
  return location.origin + consolePath();
}

export function token() {
  return sessionStorage.getItem(TOKEN);
}

export function setToken(t) {
  sessionStorage.setItem(TOKEN, t);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(PKCE);
}

// claims is what a JWT says about its holder (for showing who is signed in; the API checks
// the token, the console never trusts this), or null for a token that is not a JWT.
export function claims(t) {
  const parts = (t || '').split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const text = new TextDecoder().decode(Uint8Array.from(atob(b64 + '==='.slice((b64.length + 3) % 4)), (c) => c.charCodeAt(0)));
    return JSON.parse(text);
  } catch {
    return null;
  }
}

// ApiError is a refused or failed call, read from its problem+json body: title, detail,
// code, field errors and longrun's own request id.
export class ApiError extends Error {
  constructor({ status, title, detail, code, errors, requestId, operationId }) {
    super(detail || title || `HTTP ${status}`);
    Object.assign(this, { status, title, detail, code, errors: errors || [], requestId, operationId });
  }
}

let onUnauthenticated = () => {};

// whenUnauthenticated sets what happens when the API says the token is not (or no longer)
// good: the console signs out and asks again.
export function whenUnauthenticated(fn) {
  onUnauthenticated = fn;
}

// call sends one request to the API and returns {status, data, headers}; a status of 400 or
// more is thrown as an ApiError.
export async function call(method, path, { body, headers, query, signal } = {}) {
  const hdrs = new Headers(headers || {});
  hdrs.set('Accept', 'application/json, application/problem+json');
  const t = token();
  if (t) hdrs.set('Authorization', `Bearer ${t}`);
  let payload;
  if (body !== undefined) {
    hdrs.set('Content-Type', 'application/json');
    payload = JSON.stringify(body);
  }
  let url = apiBase() + path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
    if ([...q].length) url += `?${q}`;
  }
  let resp;
  try {
    resp = await fetch(url, { method, headers: hdrs, body: payload, cache: 'no-store', credentials: 'omit', redirect: 'error', signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError({ status: 0, title: 'The API could not be reached', detail: 'Check your connection, then try again.' });
  }
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (resp.status >= 400) {
    const p = data && typeof data === 'object' ? data : {};
    const err = new ApiError({
      status: resp.status,
      title: p.title || p.message || `HTTP ${resp.status}`,
      detail: p.detail || '',
      code: p.code || '',
      errors: Array.isArray(p.errors) ? p.errors : [],
      requestId: p.requestId || resp.headers.get('X-Request-Id') || '',
      operationId: p.operationId || '',
    });
    if (resp.status === 401) onUnauthenticated(err);
    throw err;
  }
  return { status: resp.status, data, headers: resp.headers };
}

// retryAfter is a response's Retry-After in seconds (at least 1), or null without one.
export function retryAfter(headers) {
  const v = headers.get('Retry-After');
  if (v === null) return null;
  const n = Number.parseInt(v, 10);
  return Number.isFinite(n) ? Math.max(1, n) : null;
}

// Sign-in through the Cognito hosted UI: OAuth 2.0 authorization code with PKCE (S256).

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

// startCognitoSignIn sends the browser to the hosted UI; it comes back to the console with
// ?code=…&state=….
export async function startCognitoSignIn(cognito) {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state, back: location.hash }));
  const q = new URLSearchParams({
    response_type: 'code', client_id: cognito.clientId, redirect_uri: consoleURL(), scope: 'openid',
    state, code_challenge: challenge, code_challenge_method: 'S256',
  });
  location.assign(`${cognito.domain}/oauth2/authorize?${q}`);
}

// finishCognitoSignIn handles the hosted UI's redirect back, if this page load is one: the
// code and state leave the address bar at once, the code is exchanged for tokens and the
// ID token kept. It returns null when the page is no redirect, else {ok} or {error}.
export async function finishCognitoSignIn(cognito) {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return null;
  const saved = JSON.parse(sessionStorage.getItem(PKCE) || 'null');
  sessionStorage.removeItem(PKCE);
  history.replaceState(null, '', consolePath() + ((saved && saved.back) || '#/operations'));
  if (q.has('error')) return { error: q.get('error_description') || q.get('error') };
  if (!saved || saved.state !== q.get('state')) {
    return { error: 'The sign-in answer does not belong to this tab. Sign in again.' };
  }
  let resp;
  try {
    resp = await fetch(`${cognito.domain}/oauth2/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code', client_id: cognito.clientId, code: q.get('code'),
        redirect_uri: consoleURL(), code_verifier: saved.verifier,
      }),
      credentials: 'omit', cache: 'no-store',
    });
  } catch {
    return { error: 'The sign-in service could not be reached.' };
  }
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok || !body.id_token) {
    return { error: body.error_description || body.error || `The sign-in service answered ${resp.status}.` };
  }
  setToken(body.id_token); // the API accepts Cognito ID tokens of its app clients
  return { ok: true };
}

// cognitoSignOut ends the hosted UI's session too, then comes back to the console.
export function cognitoSignOut(cognito) {
  const q = new URLSearchParams({ client_id: cognito.clientId, logout_uri: consoleURL() });
  location.assign(`${cognito.domain}/logout?${q}`);
}

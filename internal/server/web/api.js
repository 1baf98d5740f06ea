// api.js — JSON calls to the research server's API, the LangGraph Agent
// Server API (served under API_BASE), with the bearer token.
//
// The token (when the server asks for one) lives in sessionStorage and is
// sent as "Authorization: Bearer …" on every API call and stream. A 401
// calls auth.onRequired so the page can ask for it.

const TOKEN_KEY = 'deepgraph.token';

export const auth = {
  /** onRequired is called on every 401 (the page shows the token form). */
  onRequired: null,
  get token() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch {
      return '';
    }
  },
  set token(value) {
    try {
      if (value) sessionStorage.setItem(TOKEN_KEY, value);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // Storage disabled: the token lasts only as long as this page.
    }
  },
};

/** authHeaders returns the Authorization header, when there is a token. */
export function authHeaders() {
  const token = auth.token;
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** ApiError is a failed call: HTTP status, the server's code and message. */
export class ApiError extends Error {
  constructor(status, code, message, retryAfter = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter; // seconds, for 429 and 503
  }
}

/**
 * API_BASE is where the Agent Server API is served on this origin (its
 * root, next to this page); paths below and the Location headers of
 * streams are relative to it.
 */
export const API_BASE = '';

/**
 * api calls method path (a path of the API, e.g. "/threads") with an
 * optional JSON body and returns the decoded JSON (null for 202 and 204).
 * It throws ApiError for network failures (status 0) and error responses.
 */
export async function api(method, path, body, { signal } = {}) {
  const headers = { Accept: 'application/json', ...authHeaders() };
  const init = { method, headers, cache: 'no-store', signal };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(API_BASE + path, init);
  } catch (err) {
    if (err && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'Cannot reach the server. Check your connection and try again.');
  }
  if (res.status === 204 || res.status === 202) return null;
  if (!res.ok) throw await errorFrom(res);
  try {
    return await res.json();
  } catch {
    throw new ApiError(res.status, 'bad_response', `The server sent an unreadable answer to ${method} ${path}.`);
  }
}

/** errorFrom reads LangGraph's {"detail": message} from a failed response. */
export async function errorFrom(res) {
  let code = '';
  let message = '';
  try {
    const doc = await res.json();
    if (doc && typeof doc.detail === 'string') message = doc.detail;
  } catch {
    // Not JSON (a proxy's page, an empty body): use the status below.
  }
  const retryAfter = parseRetryAfter(res.headers.get('Retry-After'));
  if (res.status === 401) {
    if (typeof auth.onRequired === 'function') auth.onRequired();
    message = message || 'The server needs an access token.';
  }
  if (res.status === 429 || code === 'rate_limited') {
    message = `The server is busy, try again in ${retryAfter ?? 5} s.`;
  } else if (res.status === 503 && !message) {
    message = 'The server is not taking new work right now (it is shutting down).';
  }
  if (!message) message = `The server answered ${res.status} ${res.statusText || ''}`.trim() + '.';
  return new ApiError(res.status, code || `http_${res.status}`, message, retryAfter);
}

/** parseRetryAfter reads seconds or an HTTP date; null when absent. */
export function parseRetryAfter(value) {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return parseInt(v, 10);
  const when = Date.parse(v);
  if (Number.isNaN(when)) return null;
  return Math.max(0, Math.ceil((when - Date.now()) / 1000));
}

/** paths builds the API's paths, escaping ids. */
export const paths = {
  assistants: () => '/assistants/search',
  threadsSearch: () => '/threads/search',
  newThread: () => '/threads',
  thread: (tid) => `/threads/${encodeURIComponent(tid)}`,
  history: (tid) => `${paths.thread(tid)}/history`,
  state: (tid) => `${paths.thread(tid)}/state`,
  runs: (tid) => `${paths.thread(tid)}/runs?limit=100`,
  runStream: (tid) => `${paths.thread(tid)}/runs/stream`,
  run: (tid, rid) => `${paths.thread(tid)}/runs/${encodeURIComponent(rid)}`,
  cancel: (tid, rid) => `${paths.run(tid, rid)}/cancel`,
  join: (tid, rid) => `${paths.run(tid, rid)}/stream`,
};

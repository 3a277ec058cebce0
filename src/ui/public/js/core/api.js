// The management API client: every call carries the admin token; every failure becomes an ApiError that
// carries the server's own message (contract section 2: {code, msg, data:null} with a real HTTP status).

const TOKEN_KEY = 'edge-datacenter.adminToken';

export class ApiError extends Error {
  /** @param {number} status @param {string} msg @param {string} path */
  constructor(status, msg, path) {
    super(msg);
    this.status = status;
    this.path = path;
  }
}

export function getToken() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}
export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lives for this page only */ }
  memToken = t;
}
let memToken = '';
function token() { return getToken() || memToken; }

/** Called on a 401 from a management call (the token was changed on the server, or signed out). */
let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

/** Build '/api/v1/<path>?k=v' with every value encoded. */
export function apiUrl(path, params) {
  const q = params ? Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`).join('&') : '';
  return `/api/v1/${path}${q ? `?${q}` : ''}`;
}

/** Turn a non-2xx or non-200-envelope response into an ApiError with the server's message. */
async function errorOf(res, path) {
  let msg = '';
  try {
    const text = await res.text();
    try {
      const j = JSON.parse(text);
      msg = j && typeof j.msg === 'string' ? j.msg : text;
    } catch { msg = text.slice(0, 300); }
  } catch { /* body unreadable */ }
  if (!msg) msg = `${res.status} ${res.statusText || 'request failed'}`;
  return new ApiError(res.status, msg, path);
}

/**
 * Call the management API. Returns the envelope's `data`.
 * @param {string} method
 * @param {string} path e.g. 'schema/list'
 * @param {{params?: object, body?: any, auth?: boolean, tokenOverride?: string, headers?: object, signal?: AbortSignal, onResponse?: (res: Response) => void}} [opts]
 */
export async function api(method, path, opts = {}) {
  const headers = { Accept: 'application/json', ...opts.headers };
  const auth = opts.tokenOverride ?? token();
  if (opts.auth !== false && auth) headers.Authorization = `Bearer ${auth}`;
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(apiUrl(path, opts.params), { method, headers, body, signal: opts.signal, cache: 'no-store' });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, `Cannot reach the gateway (${e && e.message ? e.message : 'network error'})`, path);
  }
  if (opts.onResponse) opts.onResponse(res);
  if (!res.ok) {
    const err = await errorOf(res, path);
    if (res.status === 401 && !opts.tokenOverride && opts.auth !== false) onUnauthorized(err);
    throw err;
  }
  let j;
  try { j = await res.json(); } catch { throw new ApiError(res.status, 'The gateway answered with something that is not JSON', path); }
  if (!j || (j.code !== undefined && j.code !== 200)) throw new ApiError(j && j.code ? j.code : res.status, (j && j.msg) || 'Request failed', path);
  return j.data;
}

export const get = (path, params, opts = {}) => api('GET', path, { ...opts, params });
export const post = (path, body, params, opts = {}) => api('POST', path, { ...opts, body, params });
export const put = (path, body, params, opts = {}) => api('PUT', path, { ...opts, body, params });
export const del = (path, params, opts = {}) => api('DELETE', path, { ...opts, params });

/** The items of a list answer: a plain array, or the `records` of a paged one. */
export function listOf(d) {
  if (Array.isArray(d)) return d;
  if (d && Array.isArray(d.records)) return d.records;
  return [];
}

/** Raw fetch with the admin token (export streams). Throws ApiError with the server message on failure. */
export async function rawFetch(path, params, signal) {
  const res = await fetch(apiUrl(path, params), {
    headers: { Authorization: `Bearer ${token()}` }, signal, cache: 'no-store',
  }).catch((e) => {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, `Cannot reach the gateway (${e && e.message ? e.message : 'network error'})`, path);
  });
  if (!res.ok) throw await errorOf(res, path);
  return res;
}

/**
 * POST a file as the request body with the admin token (restore, import), reporting upload progress as
 * `onProgress(sentBytes, totalBytes)`. XMLHttpRequest, not fetch: it sends a File straight from disk with
 * its length and reports upload progress, where Chromium streams a fetch body only over HTTP/2. Resolves
 * with the envelope's `data`; a failure is an ApiError with the server's message; `signal` aborts.
 */
export function uploadFile(path, params, file, { onProgress, signal } = {}) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', apiUrl(path, params));
    const auth = token();
    if (auth) xhr.setRequestHeader('Authorization', `Bearer ${auth}`);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.responseType = 'text';
    if (onProgress) xhr.upload.addEventListener('progress', (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size));
    xhr.addEventListener('load', () => {
      let j = null;
      try { j = JSON.parse(xhr.responseText); } catch { /* not JSON: reported below */ }
      if (xhr.status >= 200 && xhr.status < 300 && j && j.code === 200) { resolve(j.data); return; }
      const msg = j && typeof j.msg === 'string' ? j.msg : (xhr.responseText.slice(0, 300) || `${xhr.status} ${xhr.statusText || 'request failed'}`);
      const err = new ApiError(xhr.status, msg, path);
      if (xhr.status === 401) onUnauthorized(err);
      reject(err);
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'Cannot reach the gateway (the upload was cut off)', path)));
    xhr.addEventListener('abort', () => reject(new DOMException('The upload was cancelled', 'AbortError')));
    if (signal) {
      if (signal.aborted) { reject(new DOMException('The upload was cancelled', 'AbortError')); return; }
      signal.addEventListener('abort', () => xhr.abort(), { once: true });
    }
    xhr.send(file);
  });
}

/** A message for any thrown value. */
export function messageOf(e) {
  if (e instanceof ApiError) return e.status ? `${e.msg || e.message} (HTTP ${e.status})` : e.message;
  if (e && e.message) return e.message;
  return String(e);
}

// ApiError.msg alias
Object.defineProperty(ApiError.prototype, 'msg', { get() { return this.message; } });

// --- shared cached lookups --------------------------------------------------------------------------

let secretCache = null;
/** The data-query secret (`GET datacenter/secret`, admin token). Cached for the page; force to refresh. */
export async function getSecret(force = false) {
  if (!secretCache || force) {
    const d = await get('datacenter/secret');
    secretCache = d && typeof d.secret === 'string' ? d.secret : '';
  }
  return secretCache;
}
export function clearCaches() { secretCache = null; }

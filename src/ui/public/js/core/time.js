// One time zone for every time the data view shows: the browser's, or UTC when the user asks (kept in
// localStorage, so the choice holds across views and reloads). Also the gateway's clock, as seen in the
// Date header of its answers, so "the last 15 minutes" means the gateway's last 15 minutes.

const UTC_KEY = 'edge-datacenter.timesInUtc';
/** Below this the Date header (one-second resolution) cannot tell a skew from rounding. */
const SKEW_IGNORED_MS = 2000;

let utc = readUtc();
let skewMs = 0;
const listeners = new Set();

function readUtc() {
  try { return localStorage.getItem(UTC_KEY) === '1'; } catch { return false; }
}

export function timesInUtc() { return utc; }

export function setTimesInUtc(on) {
  utc = Boolean(on);
  try { localStorage.setItem(UTC_KEY, utc ? '1' : '0'); } catch { /* storage disabled: this page only */ }
  for (const fn of listeners) fn(utc);
}

/** @returns {() => void} unsubscribe */
export function onZoneChanged(fn) { listeners.add(fn); return () => listeners.delete(fn); }

/** The IANA name of the zone in use ('UTC' or the browser's, e.g. 'Europe/Berlin'). */
export function zoneName() {
  if (utc) return 'UTC';
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
}

const pad = (n) => String(n).padStart(2, '0');

/** 'Europe/Berlin, UTC+01:00' (the offset now), or 'UTC'. */
export function zoneLabel() {
  const name = zoneName();
  if (name === 'UTC' || name === 'Etc/UTC') return 'UTC';
  const off = -new Date().getTimezoneOffset();
  const sign = off < 0 ? '-' : '+';
  return `${name}, UTC${sign}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
}

/** Calendar fields of an instant in the zone in use. */
function fields(ms) {
  const d = new Date(ms);
  return utc
    ? [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()]
    : [d.getFullYear(), d.getMonth() + 1, d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds()];
}

/** 'YYYY-MM-DD HH:MM:SS' in the zone in use. */
export function fmtTime(ms) {
  const [y, mo, d, h, mi, s] = fields(ms);
  return `${y}-${pad(mo)}-${pad(d)} ${pad(h)}:${pad(mi)}:${pad(s)}`;
}

/** The value of an <input type="datetime-local"> (to the second) for an instant, in the zone in use. */
export function toInputValue(ms) {
  return fmtTime(ms).replace(' ', 'T');
}

/** An <input type="datetime-local"> value read in the zone in use; NaN when empty or malformed. */
export function fromInputValue(value) {
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?$/.test(value)) return NaN;
  return utc ? Date.parse(`${value}Z`) : new Date(value).getTime();
}

/**
 * A record's create_at as epoch ms: history and stream records carry 'YYYY-MM-DDTHH:MM:SSZ', the latest
 * record 'YYYY-MM-DD HH:MM:SS' (both UTC).
 */
export function createAtMs(value) {
  if (typeof value !== 'string') return NaN;
  return Date.parse(value.includes('T') ? value : `${value.replace(' ', 'T')}Z`);
}

/** Note the gateway's clock from an answer's Date header. */
export function noteServerDate(res) {
  const date = Date.parse(res.headers.get('Date') || '');
  if (!Number.isFinite(date)) return;
  const seen = date + 500 - Date.now();
  skewMs = Math.abs(seen) < SKEW_IGNORED_MS ? 0 : seen;
}

/** Now on the gateway's clock (the browser's when they agree within two seconds). */
export function serverNow() { return Date.now() + skewMs; }

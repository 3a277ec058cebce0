/**
 * Rule errors reach the log once per rule and message per window (contract 18): a device that sends the
 * same bad payload a thousand times a second must not flood the log. The next line after the window
 * carries how many repeats were left out. Messages are capped at MESSAGE_BYTES_MAX in answers, stats and
 * logs, since a script decides their length.
 */
/** Contract 18's "at most 1 KB per message": bytes of UTF-8, whatever the message was prefixed with. */
export const MESSAGE_BYTES_MAX = 1024;
const REPEAT_WINDOW_MS = 10_000;
/** Distinct (rule, message) pairs remembered; beyond this the memory starts over. */
const KEYS_MAX = 1000;

/** What capMessage appends, with the count of the bytes left out. */
const CAPPED_SUFFIX = /… \((\d+) more bytes\)$/;
/** Bytes of the suffix without its count's digits: `… (` and ` more bytes)`. */
const SUFFIX_BYTES = Buffer.byteLength('… ( more bytes)');

/**
 * `message` in at most MESSAGE_BYTES_MAX bytes of UTF-8, cut at a character and ending with how many
 * bytes were left out. `restBytes`: the message went on for that many more bytes that were never
 * decoded (the worker reads only the head of a Lua string). A message capped before and then prefixed
 * (`rule NAME (UUID): line N: ` on the worker's) is cut again with the earlier count added to the new one.
 */
export function capMessage(message: string, restBytes = 0): string {
  if (restBytes === 0 && Buffer.byteLength(message, 'utf8') <= MESSAGE_BYTES_MAX) return message;
  const earlier = CAPPED_SUFFIX.exec(message);
  const text = Buffer.from(earlier === null ? message : message.slice(0, earlier.index), 'utf8');
  const leftOut = restBytes + (earlier === null ? 0 : Number(earlier[1]));
  // The count's digits take room too: reserve as many as the largest count could have.
  const room = MESSAGE_BYTES_MAX - SUFFIX_BYTES - String(text.length + leftOut).length;
  const kept = characterEnd(text, room);
  return `${text.subarray(0, kept).toString('utf8')}… (${text.length - kept + leftOut} more bytes)`;
}

/** The largest end <= `max` that does not split a UTF-8 character of `b`. */
function characterEnd(b: Buffer, max: number): number {
  let end = Math.min(max, b.length);
  // 0b10xxxxxx continues the character before it.
  while (end > 0 && end < b.length && (b[end] & 0xc0) === 0x80) end--;
  return end;
}

export class RepeatFilter {
  private readonly seen = new Map<string, { loggedAtMs: number; repeats: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  /** undefined: a repeat inside the window, leave it out; otherwise log it, with the repeats left out since. */
  admit(rule: string, message: string): { repeats: number } | undefined {
    const key = `${rule}\u0000${message}`;
    const nowMs = this.now();
    const entry = this.seen.get(key);
    if (entry !== undefined && nowMs - entry.loggedAtMs < REPEAT_WINDOW_MS) {
      entry.repeats++;
      return undefined;
    }
    if (entry === undefined && this.seen.size >= KEYS_MAX) this.seen.clear();
    this.seen.set(key, { loggedAtMs: nowMs, repeats: 0 });
    return { repeats: entry?.repeats ?? 0 };
  }
}

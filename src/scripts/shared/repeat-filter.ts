/**
 * Rule errors reach the log once per rule and message per window (contract 18): a device that sends the
 * same bad payload a thousand times a second must not flood the log. The next line after the window
 * carries how many repeats were left out. Messages are capped at MESSAGE_CHARS_MAX in answers, stats and
 * logs, since a script decides their length.
 */
export const MESSAGE_CHARS_MAX = 1024;
const REPEAT_WINDOW_MS = 10_000;
/** Distinct (rule, message) pairs remembered; beyond this the memory starts over. */
const KEYS_MAX = 1000;

/** What capMessage appends; a message already capped (by the worker) is left as it is. */
const CAPPED_SUFFIX = /… \(\d+ more (characters|bytes)\)$/;
const CAPPED_SUFFIX_CHARS_MAX = 40;

/**
 * `message` cut to MESSAGE_CHARS_MAX characters. `restBytes`: the message went on for that many more
 * bytes that were never decoded (the worker reads only the head of a Lua string).
 */
export function capMessage(message: string, restBytes = 0): string {
  if (restBytes === 0) {
    if (message.length <= MESSAGE_CHARS_MAX) return message;
    if (message.length <= MESSAGE_CHARS_MAX + CAPPED_SUFFIX_CHARS_MAX && CAPPED_SUFFIX.test(message)) return message;
    return `${message.slice(0, MESSAGE_CHARS_MAX)}… (${message.length - MESSAGE_CHARS_MAX} more characters)`;
  }
  const kept = message.slice(0, MESSAGE_CHARS_MAX);
  const unshown = Buffer.byteLength(message) - Buffer.byteLength(kept) + restBytes;
  return `${kept}… (${unshown} more bytes)`;
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

/**
 * Go's `base64.StdEncoding.DecodeString`, which RHILEX's `json:base64J2T` calls, byte for byte: the
 * standard alphabet, padding required, `\r` and `\n` skipped anywhere, trailing bits not checked
 * (not Strict), and the same error text with the same offset. Node's base64 decoder accepts what Go
 * refuses (missing padding, the URL alphabet, spaces), so a rule written for RHILEX would decode
 * input there that fails here, or the other way round.
 */

const INVALID = 0xff;
const PAD = 0x3d; // '='
const LF = 0x0a;
const CR = 0x0d;

const DECODE_MAP = (() => {
  const map = new Uint8Array(256).fill(INVALID);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < alphabet.length; i++) map[alphabet.charCodeAt(i)] = i;
  return map;
})();

export type Base64Result = { ok: true; bytes: Uint8Array } | { ok: false; error: string };

function corrupt(offset: number): Base64Result {
  return { ok: false, error: `illegal base64 data at input byte ${offset}` };
}

function isNewline(b: number): boolean {
  return b === LF || b === CR;
}

/** Decodes `src` as Go's StdEncoding does; on error, Go's message (the bytes decoded so far are dropped, as RHILEX drops them). */
export function decodeGoBase64(src: Uint8Array): Base64Result {
  const out = new Uint8Array(Math.floor(src.length / 4) * 3 + 3);
  let n = 0;
  let si = 0;
  const quantum = new Uint8Array(4);
  while (si < src.length) {
    // One quantum of up to 4 symbols (Go's decodeQuantum).
    let length = 4;
    let end = false;
    quantum.fill(0);
    for (let j = 0; j < 4; j++) {
      if (si === src.length) {
        if (j === 0) return { ok: true, bytes: out.subarray(0, n) };
        // Padding is required: a short last quantum is an error at its start.
        return corrupt(si - j);
      }
      const symbol = src[si++];
      const value = DECODE_MAP[symbol];
      if (value !== INVALID) {
        quantum[j] = value;
        continue;
      }
      if (isNewline(symbol)) {
        j--;
        continue;
      }
      if (symbol !== PAD) return corrupt(si - 1);
      // Padding: the end of the data.
      if (j < 2) return corrupt(si - 1);
      if (j === 2) {
        // "==" is expected; the first '=' is consumed.
        while (si < src.length && isNewline(src[si])) si++;
        if (si === src.length) return corrupt(src.length);
        if (src[si] !== PAD) return corrupt(si - 1);
        si++;
      }
      while (si < src.length && isNewline(src[si])) si++;
      if (si < src.length) return corrupt(si);
      length = j;
      end = true;
      break;
    }
    const value = (quantum[0] << 18) | (quantum[1] << 12) | (quantum[2] << 6) | quantum[3];
    out[n++] = (value >> 16) & 0xff;
    if (length >= 3) out[n++] = (value >> 8) & 0xff;
    if (length === 4) out[n++] = value & 0xff;
    if (end) break;
  }
  return { ok: true, bytes: out.subarray(0, n) };
}

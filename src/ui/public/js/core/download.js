// A streamed download the page saves itself: read with progress, then handed to the browser through a
// blob: URL (a plain link could not carry the admin token in a header).
import { h } from './dom.js';

const PAINT_MS = 100;

/**
 * Reads the whole answer, calling onProgress({bytes, lines}) at most every 100 ms; returns the chunks
 * with the totals (lines: the count of '\n').
 */
export async function receive(res, onProgress) {
  const reader = res.body.getReader();
  const chunks = [];
  let bytes = 0;
  let lines = 0;
  let lastPaint = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    bytes += value.length;
    for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++;
    const now = performance.now();
    if (now - lastPaint > PAINT_MS) {
      lastPaint = now;
      onProgress({ bytes, lines });
    }
  }
  return { chunks, bytes, lines };
}

/** Offers the chunks as a file download; `/` and `\` in the name become `_`. */
export function saveAs(chunks, type, filename) {
  const safe = filename.replace(/[/\\]/g, '_');
  const url = URL.createObjectURL(new Blob(chunks, { type }));
  const a = h('a', { href: url, download: safe, class: 'offscreen' });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return safe;
}

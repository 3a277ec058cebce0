/**
 * How a body becomes payloads, the same for a push and a dry run: NDJSON (`application/x-ndjson`, also
 * `application/jsonl`) gives one payload per non-blank line, anything else one payload in all.
 */

export function isLineDelimited(contentType: string): boolean {
  const type = contentType.toLowerCase();
  return type.startsWith('application/x-ndjson') || type.startsWith('application/jsonl');
}

/** The payloads of a body; empty when it holds none (the caller says what was empty). */
export function splitPayloads(text: string, contentType: string): string[] {
  if (isLineDelimited(contentType)) {
    return text
      .split('\n')
      .map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
      .filter((l) => l.trim().length > 0);
  }
  return text.trim().length > 0 ? [text] : [];
}

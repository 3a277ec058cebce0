/**
 * Contract 18: a rule's error reaches the push answer, `rules/stats`, `inends/stats` and `dryRun` in at
 * most 1 KB per message: 1,024 bytes of UTF-8, the `rule NAME (UUID): line N: ` prefix and the note of
 * how much was left out included. Errors of 100 KB in one-byte and in two-byte characters, and a short one
 * that stays whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

const MESSAGE_BYTES_MAX = 1024;

let svc: TestService;
let inend: string;
let token: string;
let rule: string;

/** Throws 100 KB of `x` for payload "ascii", of `é` for "utf8", a short message otherwise. */
const ACTIONS = `Actions = {
  function(args)
    if args == "ascii" then Throw(string.rep("x", 100000)) return 0 end
    if args == "utf8" then Throw(string.rep("é", 50000)) return 0 end
    Throw("short " .. args)
    return 0
  end
}`;

async function must(path: string, body?: unknown): Promise<any> {
  const r = await call(svc.base, path, body === undefined ? {} : { method: 'POST', body });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
  ({ uuid: inend, token } = await must('/api/v1/inends/create', { name: 'plc', type: 'HTTP', description: '' }));
  ({ uuid: rule } = await must('/api/v1/rules/create', { name: 'loud', description: '', fromSource: [inend], actions: ACTIONS, success: '', failed: '' }));
}, 60_000);
afterAll(async () => svc?.close());

describe('rule error messages are at most 1 KB wherever they leave (contract 18)', () => {
  it('in the push answer, rules/stats and inends/stats, prefix included', async () => {
    const r = await call(svc.base, `/api/v1/inends/push?uuid=${inend}`, {
      method: 'POST',
      token,
      body: 'ascii\nutf8\nok\n',
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    expect(r.status, r.text).toBe(200);
    const messages: string[] = r.body.data.errors.map((e: { message: string }) => e.message);
    expect(messages).toHaveLength(3);
    for (const m of messages.slice(0, 2)) {
      expect(bytes(m), m.slice(0, 80)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
      expect(m).toMatch(new RegExp(`^rule loud \\(${rule}\\): line \\d+: `));
      expect(m).toMatch(/… \(\d+ more bytes\)$/);
    }
    expect(messages[2]).toMatch(new RegExp(`^rule loud \\(${rule}\\): line 5: short ok$`));

    const stats = await must(`/api/v1/rules/stats?uuid=${rule}`);
    expect(stats.lastErrors).toHaveLength(3);
    for (const e of stats.lastErrors) expect(bytes(e.message), e.message.slice(0, 80)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);

    const input = await must(`/api/v1/inends/stats?uuid=${inend}`);
    expect(bytes(input.lastError.message)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
  });

  it('in a dry run', async () => {
    const r = await must('/api/v1/rules/dryRun', { actions: ACTIONS, payload: 'ascii\nutf8', contentType: 'application/x-ndjson' });
    expect(r.errors).toHaveLength(2);
    for (const e of r.errors) {
      expect(bytes(e.message), e.message.slice(0, 80)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
      expect(e.message).toMatch(/… \(\d+ more bytes\)$/);
    }
  });
});

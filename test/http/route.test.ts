/**
 * The route wrapper on a real server of the test transport (test/support/transport.ts): handlers that throw or reject (before and after an await) answer
 * 500 without a stack and the process lives on; streams respect backpressure and survive clients that
 * go away mid-transfer.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError, PushPartlyKeptError, UnavailableError } from '../../src/errors.js';
import { RawReply, StreamReply } from '../../src/http/core/reply.js';
import { PUBLIC, Router } from '../../src/http/core/router.js';
import { serveRouter } from '../support/transport.js';

let base: string;
let server: { base: string; close(): void };
let streamedChunks = 0;
let streamFinished: 'done' | 'aborted' | 'pending' = 'pending';

beforeAll(async () => {
  const router = new Router({
    logger: pino({ level: 'silent' }),
    urlBytesMax: 2048,
    bodyBytesMax: 1024,
    fallback: () => new RawReply(404, { 'Content-Type': 'text/plain' }, 'nothing here'),
  });
  router.group({ prefix: '/api', guard: PUBLIC }, (g) => {
    g.get('/throw', () => { throw new TypeError('secret internals'); });
    g.get('/reject', async () => { throw new Error('boom'); });
    g.get('/late', async () => {
      await new Promise((r) => setTimeout(r, 20));
      (undefined as unknown as { x: number }).x;
      return 1;
    });
    g.get('/edge', () => { throw new NotFoundError('no such thing'); });
    g.get('/busy', () => { throw new UnavailableError('queue full', 3); });
    g.get('/kept', () => { throw new PushPartlyKeptError('read-only', { accepted: 2, failed: 1, kept: [1, 3] }); });
    g.get('/slow', () => new Promise((r) => setTimeout(() => r({ ok: true }), 300)));
    g.post('/echo', (ctx) => ({ bytes: ctx.body.length, text: ctx.body.toString() }));
    g.get('/stream', () =>
      new StreamReply({ 'Content-Type': 'text/plain' }, async (sink) => {
        const line = `${'y'.repeat(1023)}\n`;
        for (let i = 0; i < 4_000; i++) {
          if (sink.aborted) {
            streamFinished = 'aborted';
            return;
          }
          streamedChunks++;
          if (!sink.write(line.repeat(16))) await sink.drain();
        }
        streamFinished = 'done';
      }),
    );
    g.get('/stream-fail', () =>
      new StreamReply({}, async (sink) => {
        sink.write('partial');
        throw new Error('disk gone');
      }),
    );
  });
  server = await serveRouter(router);
  base = server.base;
});

afterAll(() => {
  server.close();
});

describe('route wrapper', () => {
  it.each(['/api/throw', '/api/reject', '/api/late'])('%s answers 500 internal error without details', async (path) => {
    const r = await fetch(base + path);
    expect(r.status).toBe(500);
    expect(await r.text()).toBe('{"code":500,"msg":"internal error","data":null}');
  });

  it('a push partly kept answers 503 with Retry-After and the kept lines in data', async () => {
    const r = await fetch(`${base}/api/kept`);
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(await r.json()).toEqual({ code: 503, msg: 'read-only', data: { accepted: 2, failed: 1, kept: [1, 3] } });
  });

  it('maps EdgeErrors to their status; 503 carries Retry-After', async () => {
    const r = await fetch(`${base}/api/edge`);
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ code: 404, msg: 'no such thing', data: null });
    const b = await fetch(`${base}/api/busy`);
    expect(b.status).toBe(503);
    expect(b.headers.get('retry-after')).toBe('3');
    await b.text();
  });

  it('a client that leaves before an async answer does not crash the process', async () => {
    const controller = new AbortController();
    const pending = fetch(`${base}/api/slow`, { signal: controller.signal }).catch((e: Error) => e.name);
    setTimeout(() => controller.abort(), 50);
    expect(await pending).toBe('AbortError');
    await new Promise((r) => setTimeout(r, 400));
    expect((await fetch(`${base}/api/edge`)).status).toBe(404);
  });

  it('reads bodies in chunks and enforces the body limit', async () => {
    const ok = await fetch(`${base}/api/echo`, { method: 'POST', body: 'héllo' });
    expect(await ok.json()).toMatchObject({ code: 200, data: { bytes: 6, text: 'héllo' } });
    const big = await fetch(`${base}/api/echo`, { method: 'POST', body: 'x'.repeat(1025) });
    expect(big.status).toBe(413);
    await big.text();
    const exact = await fetch(`${base}/api/echo`, { method: 'POST', body: 'x'.repeat(1024) });
    expect(exact.status).toBe(200);
    await exact.text();
  });

  it('URL limit: 414', async () => {
    const r = await fetch(`${base}/api/edge?q=${'a'.repeat(3000)}`);
    expect(r.status).toBe(414);
    expect(((await r.json()) as { code: number }).code).toBe(414);
  });

  it('streams a large body completely to a reader', async () => {
    streamedChunks = 0;
    const r = await fetch(`${base}/api/stream`);
    expect(r.status).toBe(200);
    const body = await r.arrayBuffer();
    expect(body.byteLength).toBe(4_000 * 16 * 1024);
    expect(streamFinished).toBe('done');
  });

  it('stops producing when the client goes away mid-stream (backpressure, abort)', async () => {
    streamedChunks = 0;
    streamFinished = 'pending';
    const controller = new AbortController();
    const r = await fetch(`${base}/api/stream`, { signal: controller.signal });
    const reader = r.body!.getReader();
    await reader.read();
    // Not reading: the producer must be waiting for drain, not racing ahead.
    await new Promise((res) => setTimeout(res, 200));
    expect(streamedChunks).toBeLessThan(4_000);
    controller.abort();
    await new Promise((res) => setTimeout(res, 300));
    expect(streamFinished).toBe('aborted');
    expect((await fetch(`${base}/api/edge`)).status).toBe(404);
  });

  it('a stream that fails after the head cuts the connection', async () => {
    const outcome = await fetch(`${base}/api/stream-fail`)
      .then((r) => r.text())
      .then(
        () => 'complete',
        () => 'cut',
      );
    expect(outcome).toBe('cut');
    expect((await fetch(`${base}/api/edge`)).status).toBe(404);
  });

  it('non-API paths go to the fallback; other methods there get 405', async () => {
    const r = await fetch(`${base}/some/page`);
    expect(r.status).toBe(404);
    expect(await r.text()).toBe('nothing here');
    const p = await fetch(`${base}/some/page`, { method: 'PUT' });
    expect(p.status).toBe(405);
    await p.text();
  });
});

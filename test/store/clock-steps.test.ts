/**
 * Record timestamps under wall-clock steps (the gateway's RTC corrected by NTP or GPS): a small step back
 * keeps create_at from decreasing; a large one (more than clockJumpMaxMs) is logged once and new records
 * take the clock's time, so one glitch a year ahead does not freeze every later timestamp there, also
 * after a restart.
 */
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { openModel, openStore, rec, removeTmpDirs, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);
afterEach(() => vi.useRealTimers());

const T0 = Date.parse('2026-11-23T12:00:00Z');
const YEAR_MS = 365 * 86_400_000;

describe('create_at under clock steps', () => {
  it('small steps back are clamped; a large one is logged once and not kept in the future', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const notes: string[] = [];
    const dir = tmpDir();
    let store = await openStore(dir, { clockJumpMaxMs: 60_000 }, { warn: (m) => notes.push(m) });
    let log = await openModel(store);
    const ts = async (): Promise<number> => log.latest()?.create_at as number;

    vi.setSystemTime(T0);
    log.save(rec(1));
    vi.setSystemTime(T0 - 5_000); // NTP pulls the clock back 5 s
    log.save(rec(2));
    expect(await ts()).toBe(T0);

    vi.setSystemTime(T0 + YEAR_MS); // a glitch: one record stamped a year ahead
    log.save(rec(3));
    vi.setSystemTime(T0 + 10_000); // the clock is corrected
    log.save(rec(4));
    expect(await ts()).toBe(T0 + 10_000);
    log.save(rec(5));
    expect(await ts()).toBe(T0 + 10_000);
    expect(notes.filter((n) => n.includes('behind the newest record'))).toHaveLength(1);
    await log.durable();
    await store.close();

    // After a restart whose newest record came from the glitch, the next one is not frozen there either.
    vi.setSystemTime(T0 + YEAR_MS);
    store = await openStore(dir, { clockJumpMaxMs: 60_000 }, { warn: (m) => notes.push(m) });
    log = await openModel(store);
    log.save(rec(6));
    await log.durable();
    await store.close();
    vi.setSystemTime(T0 + 20_000);
    store = await openStore(dir, { clockJumpMaxMs: 60_000 }, { warn: (m) => notes.push(m) });
    log = await openModel(store);
    log.save(rec(7));
    expect(await ts()).toBe(T0 + 20_000);
    const page = await log.page({ current: 1, size: 10, order: 'asc' });
    expect(page.records.map((r) => r.create_at)).toEqual([T0, T0, T0 + YEAR_MS, T0 + 10_000, T0 + 10_000, T0 + YEAR_MS, T0 + 20_000]);
    await store.close();
  });
});

/**
 * The shippers' share of a saturated main thread (loop-share.ts): busy turns of other work make the
 * shippers wait, their own work and an idle loop do not. The loop is simulated: performance.now() and
 * performance.eventLoopUtilization() (what LoopShare reads) follow a clock the test moves, so a turn of
 * 5 ms is 5 ms of loop time whatever the machine does meanwhile. Against the real loop a busy machine
 * made the idle case fail: a process waiting for a core counts as a busy loop (57 ms of pause where 0 was
 * due, issue 31).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LoopShare, PAUSE_MS_MAX, SHARE_MAX } from '../../src/uplink/loop-share.js';

/** The simulated loop: time passes busy (a turn runs) or idle (the loop waits in poll). */
const loop = { nowMs: 1_000, activeMs: 0, idleMs: 0 };

function busy(ms: number): void {
  loop.nowMs += ms;
  loop.activeMs += ms;
}

function idle(ms: number): void {
  loop.nowMs += ms;
  loop.idleMs += ms;
}

beforeEach(() => {
  Object.assign(loop, { nowMs: 1_000, activeMs: 0, idleMs: 0 });
  vi.spyOn(performance, 'now').mockImplementation(() => loop.nowMs);
  // eventLoopUtilization(): the totals so far; (a, b): a less b (LoopShare calls no other form).
  vi.spyOn(performance, 'eventLoopUtilization').mockImplementation(((a?: { idle: number; active: number }, b?: { idle: number; active: number }) => {
    const now = a === undefined ? { idle: loop.idleMs, active: loop.activeMs } : { idle: a.idle - (b?.idle ?? 0), active: a.active - (b?.active ?? 0) };
    return { ...now, utilization: now.active / Math.max(1e-9, now.active + now.idle) };
  }) as typeof performance.eventLoopUtilization);
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe('LoopShare', () => {
  it('makes a shipper wait after a batch while other work saturates the loop, until its time is SHARE_MAX of the loop', () => {
    const share = new LoopShare();
    const pauses: number[] = [];
    for (let i = 0; i < 40; i++) {
      busy(5); // a writer's turn
      busy(0.05); // the turn between
      busy(1); // the shipper's batch
      pauses.push(share.pauseAfter(1));
      busy(0.05);
    }
    const late = pauses.slice(20);
    expect(late.every((p) => p > 0)).toBe(true);
    // Back to back, each batch of 1 ms pushes the next start on by 1 / SHARE_MAX - 1 ms, up to the cap.
    expect(Math.max(...late)).toBeLessThanOrEqual(PAUSE_MS_MAX);
    expect(late[late.length - 1]).toBeGreaterThan(1 / SHARE_MAX - 1);
  });

  it('lets a shipper run at once when the loop has room, or when the busy time is its own', () => {
    const idleLoop = new LoopShare();
    for (let i = 0; i < 8; i++) {
      idle(10); // a 10 ms timer
      busy(1);
      expect(idleLoop.pauseAfter(1)).toBe(0);
    }
    const catchingUp = new LoopShare();
    for (let i = 0; i < 40; i++) {
      busy(3); // only the shipper works: a catch-up after an outage
      expect(catchingUp.pauseAfter(3)).toBe(0);
      busy(0.05); // the turn between
      idle(0.05);
    }
  });

  it('goes back to no pause once the other work stops', () => {
    const share = new LoopShare();
    for (let i = 0; i < 40; i++) {
      busy(5);
      busy(1);
      share.pauseAfter(1);
    }
    expect(share.pauseAfter(1)).toBeGreaterThan(0);
    // The writers stop: the loop waits for the shipper's next batch, the window after shows room.
    idle(100);
    busy(1);
    share.pauseAfter(1);
    idle(100);
    busy(1);
    expect(share.pauseAfter(1)).toBe(0);
  });
});

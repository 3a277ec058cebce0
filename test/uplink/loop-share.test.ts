/**
 * The shippers' share of a saturated main thread (loop-share.ts), against the real event loop: busy turns
 * of other work make the shippers wait, their own work and an idle loop do not.
 */
import { describe, expect, it } from 'vitest';
import { LoopShare, PAUSE_MS_MAX, SHARE_MAX } from '../../src/uplink/loop-share.js';

function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('LoopShare', () => {
  it('makes a shipper wait after a batch while other work saturates the loop, until its time is SHARE_MAX of the loop', async () => {
    const share = new LoopShare();
    const pauses: number[] = [];
    for (let i = 0; i < 40; i++) {
      spin(5); // a writer's turn
      await turn();
      spin(1); // the shipper's batch
      pauses.push(share.pauseAfter(1));
      await turn();
    }
    const late = pauses.slice(20);
    expect(late.every((p) => p > 0)).toBe(true);
    // Back to back, each batch of 1 ms pushes the next start on by 1 / SHARE_MAX - 1 ms, up to the cap.
    expect(Math.max(...late)).toBeLessThanOrEqual(PAUSE_MS_MAX);
    expect(late[late.length - 1]).toBeGreaterThan(1 / SHARE_MAX - 1);
  });

  it('lets a shipper run at once when the loop has room, or when the busy time is its own', async () => {
    const idle = new LoopShare();
    for (let i = 0; i < 8; i++) {
      await new Promise((r) => setTimeout(r, 10));
      spin(1);
      expect(idle.pauseAfter(1)).toBe(0);
    }
    const catchingUp = new LoopShare();
    for (let i = 0; i < 40; i++) {
      spin(3); // only the shipper works: a catch-up after an outage
      expect(catchingUp.pauseAfter(3)).toBe(0);
      await turn();
    }
  });
});

/**
 * deliverAll (src/inputs/deliver.ts) with sinks that refuse: a push the sink throws anything at is offered
 * again after a backoff, with the error shown as the input's last error, until it is taken or the input
 * stops; a stop ends it without an acknowledgement. (The sinks here stand in for engine.push; the real
 * one's refusals are exercised through real inputs in flow-control and readonly-store tests.)
 */
import { describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/errors.js';
import { StopSignal } from '../../src/inputs/backoff.js';
import { deliverAll, type InputSink } from '../../src/inputs/deliver.js';
import { InputStatus } from '../../src/inputs/input-status.js';

const taken = (n: number) => ({ accepted: n, failed: 0, errors: [], durable: true });

describe('deliverAll', () => {
  it('offers a push again after an unexpected error, shows it, and stores it once taken', async () => {
    const status = new InputStatus();
    status.set('listening');
    let calls = 0;
    const sink: InputSink = (payloads) => {
      calls++;
      if (calls <= 2) throw new Error(`engine hiccup ${calls}`);
      return Promise.resolve(taken(payloads.length));
    };
    const outcome = await deliverAll(sink, ['a', 'b'], status, new StopSignal());
    expect(outcome).toEqual({ accepted: 2, failed: 0 });
    expect(calls).toBe(3);
    expect(status.view()).toMatchObject({ stored: 2, connection: { state: 'listening', lastError: 'engine hiccup 2' } });
  });

  it('ends without an acknowledgement when the input stops while it waits', async () => {
    const status = new InputStatus();
    const stop = new StopSignal();
    const sink: InputSink = () => {
      stop.stop();
      throw new UnavailableError('queue is full (test)', 1);
    };
    expect(await deliverAll(sink, ['a'], status, stop)).toBe('stopped');
    expect(status.view().stored).toBe(0);
  });
});

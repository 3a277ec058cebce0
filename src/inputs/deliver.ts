/**
 * Hands one message's payload to the input's queue and keeps at it until its records are stored: the
 * acknowledgement of an MQTT message waits for this (contract 21), so nothing acknowledged is lost. A
 * full queue (503) or a read-only store is retried after a jittered wait instead of dropping the message:
 * meanwhile the message stays unacknowledged and the connection is not read (flow control).
 */
import { UnavailableError } from '../errors.js';
import type { PushResult } from '../scripts/shared/types.js';
import { Backoff, type StopSignal } from './backoff.js';
import type { InputStatus } from './input-status.js';

/** engine.push of one input: all payloads queued or none (UnavailableError when full); resolves once stored (contract 9). */
export type InputSink = (payloads: string[], options: { waitDurable: boolean }) => Promise<PushResult>;

/** Retries of a refused push: soon at first, at most every 2 s. */
const RETRY_FIRST_MS = 20;
const RETRY_MAX_MS = 2000;

/**
 * 'stored': the rules ran and their records are stored (durably under `sync = always`). 'failed': a rule
 * or the record check refused it: a retry would fail the same way, so it is acknowledged and counted in
 * the input's `failed`. 'stopped': the input stopped first: not acknowledged, the sender sends it again.
 */
export type Delivery = 'stored' | 'failed' | 'stopped';

export async function deliver(sink: InputSink, payload: string, status: InputStatus, stop: StopSignal): Promise<Delivery> {
  const backoff = new Backoff(RETRY_FIRST_MS, RETRY_MAX_MS);
  while (!stop.isStopped) {
    let result: PushResult;
    try {
      result = await sink([payload], { waitDurable: false });
    } catch (err) {
      // Queue full, store read-only, service shutting down: wait and offer it again.
      if (!(err instanceof UnavailableError)) return 'stopped';
      if (!(await stop.sleep(backoff.nextMs()))) return 'stopped';
      continue;
    }
    if (result.storeReadOnly !== undefined) {
      // Kept in memory only until space returns: not durable, so not acknowledged; offered again once
      // the store takes writes (a second copy then: at least once).
      if (!(await stop.sleep(backoff.nextMs()))) return 'stopped';
      continue;
    }
    if (result.accepted === 1) {
      status.stored++;
      return 'stored';
    }
    return 'failed';
  }
  return 'stopped';
}

/**
 * Hands the payloads of an input's messages to its queue (deliverAll) and keeps at it until their
 * records are stored: the acknowledgement of an MQTT message waits for this
 * (contract 21), so nothing acknowledged is lost. A full queue (503) or a read-only store is retried
 * after a jittered wait instead of dropping the message: meanwhile the message stays unacknowledged and
 * the connection is not read (flow control).
 */
import { InvalidArgumentError, UnavailableError } from '../errors.js';
import type { PushResult } from '../scripts/shared/types.js';
import { Backoff, type StopSignal } from './backoff.js';
import type { InputStatus } from './input-status.js';

/** engine.push of one input: all payloads queued or none (UnavailableError when full); resolves once stored (contract 9). */
export type InputSink = (payloads: string[], options: { waitDurable: boolean }) => Promise<PushResult>;

/** Retries of a refused push: soon at first, at most every 2 s. */
const RETRY_FIRST_MS = 20;
const RETRY_MAX_MS = 2000;

/** How many of a deliverAll's payloads were stored, and how many a rule or the record check refused. */
export interface Delivered {
  accepted: number;
  failed: number;
}

/**
 * Hands many messages to the queue in one push (one ticket, one settle for all): resolves once every
 * payload is stored, or failed in a rule or the record check (a retry would fail the same way, so it may
 * be acknowledged; the engine counts it `failed`), so each of their acknowledgements may go out then;
 * 'stopped' when the input stopped first (none acknowledged, the sender sends them again). A refused push
 * (full queue, read-only store, or any other error, shown as the input's last error) is offered again
 * whole after a backoff: the payloads already kept are then stored a second time (at least once). A push
 * over the queue's size (`[scripts] queue_max` smaller than the batch) is split in halves until it fits.
 */
export async function deliverAll(sink: InputSink, payloads: string[], status: InputStatus, stop: StopSignal): Promise<Delivered | 'stopped'> {
  const backoff = new Backoff(RETRY_FIRST_MS, RETRY_MAX_MS);
  while (!stop.isStopped) {
    let result: PushResult;
    try {
      result = await sink(payloads, { waitDurable: false });
    } catch (err) {
      if (err instanceof InvalidArgumentError && payloads.length > 1) return split(sink, payloads, status, stop);
      // Queue full, store read-only, service shutting down: wait and offer it again. Anything else is
      // not ours to drop either: shown as the input's last error, and offered again the same way.
      if (!(err instanceof UnavailableError)) status.set(status.current, err);
      if (!(await stop.sleep(backoff.nextMs()))) return 'stopped';
      continue;
    }
    if (result.storeReadOnly !== undefined) {
      // Kept in memory only until space returns: not durable, so not acknowledged; offered again once
      // the store takes writes (a second copy then: at least once).
      if (!(await stop.sleep(backoff.nextMs()))) return 'stopped';
      continue;
    }
    status.stored += result.accepted;
    return { accepted: result.accepted, failed: result.failed };
  }
  return 'stopped';
}

async function split(sink: InputSink, payloads: string[], status: InputStatus, stop: StopSignal): Promise<Delivered | 'stopped'> {
  const half = Math.ceil(payloads.length / 2);
  const parts = await Promise.all([deliverAll(sink, payloads.slice(0, half), status, stop), deliverAll(sink, payloads.slice(half), status, stop)]);
  if (parts[0] === 'stopped' || parts[1] === 'stopped') return 'stopped';
  return { accepted: parts[0].accepted + parts[1].accepted, failed: parts[0].failed + parts[1].failed };
}

/**
 * The two kinds of traffic: pushes to an HTTP input from several keep-alive connections, each sending
 * its next push as soon as the last one is answered (the service's rate, not a chosen one), and reads
 * one at a time whose latencies are kept.
 */
import { BenchError } from '../errors.js';
import type { Client } from './client.js';
import { samplePayload, type SampleInput } from './sample-rule.js';

/** Latencies kept per measurement at most, so a long run on a fast device stays bounded in memory. */
const SAMPLES_MAX = 200_000;
/** Different bodies cycled through, so the rule does not see one payload over and over. */
const BODIES = 8;

export interface PushResult {
  /** Payloads the rule stored (one record each). */
  accepted: number;
  /** Pushes answered 503 (a full input queue), retried after a pause. */
  rejected: number;
  seconds: number;
}

/**
 * Pushes of `lines` payloads on `connections` connections until `seconds` have passed. A payload the rule
 * fails, or an answer other than 200 and 503, ends the run: the figures would not be of the sample rule.
 */
export async function pushLoad(client: Client, input: SampleInput, connections: number, lines: number, seconds: number): Promise<PushResult> {
  const bodies = Array.from({ length: BODIES }, (_, b) => Buffer.from(Array.from({ length: lines }, (_, i) => samplePayload(b * lines + i)).join('\n')));
  const result: PushResult = { accepted: 0, rejected: 0, seconds: 0 };
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const connection = async (c: number): Promise<void> => {
    for (let n = c; performance.now() < deadline; n++) {
      const { status, text } = await client.push(input.inend, input.token, bodies[n % BODIES]);
      if (status === 503) {
        result.rejected++;
        await new Promise((resolve) => setTimeout(resolve, 5));
        continue;
      }
      if (status !== 200) throw new BenchError(`a push answered ${status}: ${text.slice(0, 300)}`);
      const data = (JSON.parse(text) as { data: { accepted: number; failed: number; errors: unknown[] } }).data;
      if (data.failed > 0) throw new BenchError(`the sample rule failed ${data.failed} payloads: ${JSON.stringify(data.errors).slice(0, 300)}`);
      result.accepted += data.accepted;
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, c) => connection(c)));
  result.seconds = (performance.now() - started) / 1000;
  return result;
}

/** Milliseconds of each read of `path`, one after the other, until `seconds` have passed (and at least `minimum` reads). */
export async function readLatencies(client: Client, path: string, seconds: number, minimum = 5): Promise<number[]> {
  const out: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  while (out.length < minimum || performance.now() < deadline) {
    const t0 = performance.now();
    const { status, text } = await client.read(path, false);
    const ms = performance.now() - t0;
    if (status !== 200) throw new BenchError(`GET ${path.replace(/\?.*/, '')} answered ${status}: ${text.slice(0, 300)}`);
    if (out.length < SAMPLES_MAX) out.push(ms);
  }
  return out;
}

/** The q-quantile of `values` (nearest rank). */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new BenchError('no samples to take a percentile of');
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

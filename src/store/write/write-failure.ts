/**
 * What a writer does when a write, fdatasync or seal fails: the model turns read-only at once; once the
 * other lane's step in flight has finished, a failed write's partial bytes are cut back (ftruncate) and a
 * retry is armed; the retry lets the lanes start again, and the first step that then succeeds makes the
 * model writable. Accepted records stay in memory meanwhile (see docs/storage-format.md "Disk full").
 */
import { type FileIo, describeIoError } from '../base/file-io.js';
import type { Segment } from '../segment/segment.js';
import type { ModelLogState } from '../base/types.js';
import { assert } from '../base/constants.js';
import { StoreReadOnlyError } from '../../errors.js';

/**
 * ok: steps may start. failed: a step failed, the cut-back waits for the step still in flight.
 * cutting-back: the cut-back runs (alone). stalled: waiting for the retry (timer, drain, requestSync, unblock).
 */
export type Health = 'ok' | 'failed' | 'cutting-back' | 'stalled';

export type FailedStep = 'write' | 'segment seal' | 'fdatasync';

export interface WriteFailureOptions {
  modelId: string;
  io: FileIo;
  retryMs: number;
  warn: (message: string) => void;
}

export class WriteFailure {
  private healthNow: Health = 'ok';
  private stateNow: ModelLogState = 'ok';
  /** When the model last turned read-only (wall clock, ms); undefined while writable. */
  private since: number | undefined;
  private reasonNow: string | undefined;
  private last: string | undefined;
  /** The segment of the failed write whose partial bytes must be cut back once nothing is in flight. */
  private failedWriteSeg: Segment | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: WriteFailureOptions) {}

  get health(): Health {
    return this.healthNow;
  }

  /** Nothing new may start until the retry. */
  get stalled(): boolean {
    return this.healthNow !== 'ok';
  }

  get state(): ModelLogState {
    return this.stateNow;
  }

  get readOnlySinceMs(): number | undefined {
    return this.since;
  }

  get lastError(): string | undefined {
    return this.last;
  }

  readOnlyError(): StoreReadOnlyError {
    return new StoreReadOnlyError(this.o.modelId, this.reasonNow ?? 'unknown');
  }

  /** A step failed (`seg`: the segment of a failed write): read-only at once. */
  failed(err: unknown, op: FailedStep, seg: Segment | undefined): void {
    assert(this.healthNow === 'ok' || this.healthNow === 'failed', 'a step fails only while steps may run');
    this.since ??= Date.now();
    this.stateNow = 'read-only';
    this.reasonNow = describeIoError(err, op);
    this.last = this.reasonNow;
    this.healthNow = 'failed';
    if (seg !== undefined) this.failedWriteSeg = seg;
  }

  /**
   * Nothing is in flight: a short or failed write may have left part of a chunk, cut back to the last
   * whole frame (the retried write overwrites it anyway, so a failed cut-back is only logged). The writer
   * calls cutBackEnded when it has seen this finish.
   */
  async cutBack(): Promise<void> {
    assert(this.healthNow === 'failed', 'a cut-back follows a failure');
    this.healthNow = 'cutting-back';
    const seg = this.failedWriteSeg;
    this.failedWriteSeg = undefined;
    if (seg?.file.attached) {
      await seg.file.use((fd) => this.o.io.ftruncate(fd, seg.writtenBytes)).catch((e: unknown) => {
        this.o.warn(`model ${this.o.modelId}: cutting back a failed write failed: ${describeIoError(e, 'ftruncate')}`);
      });
    }
  }

  /** Stalled until `retry` runs (none once the writer is closed). */
  cutBackEnded(retry: (() => void) | undefined): void {
    assert(this.healthNow === 'cutting-back', 'a cut-back was running');
    this.healthNow = 'stalled';
    if (retry === undefined) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(retry, this.o.retryMs);
    this.retryTimer.unref();
  }

  /** A retry point: a stalled writer may start steps again (it is writable once one succeeds). */
  resume(): void {
    if (this.healthNow === 'stalled') this.healthNow = 'ok';
  }

  /** A step succeeded: unless a failure is being handled, the failed step went through and the model is writable. */
  stepSucceeded(): void {
    if (this.healthNow !== 'ok' || this.stateNow === 'ok') return;
    this.stateNow = 'ok';
    this.since = undefined;
    this.reasonNow = undefined;
    clearTimeout(this.retryTimer);
  }

  close(): void {
    clearTimeout(this.retryTimer);
  }
}

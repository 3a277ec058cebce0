/**
 * The messages a network input takes in one turn of the event loop, gathered into one push: the built-in
 * broker's, the client's and UDP's. A batch is handed on from setImmediate, after the poll phase, when
 * every socket read of the turn is in; or at once when it is full (BATCH_MESSAGES_MAX messages or
 * BATCH_CHARS_MAX characters of payloads), and the next one starts. Each message brings what its input
 * must do once the push is stored (an acknowledgement, an answer's address), handed on beside it.
 * Imports: nothing.
 */

/** A batch's bounds: one push of the queue, one worker task or a few. */
export const BATCH_MESSAGES_MAX = 512;
export const BATCH_CHARS_MAX = 4 * 1024 * 1024;

interface Batch<T> {
  payloads: string[];
  items: T[];
  chars: number;
}

export class TurnBatches<T> {
  private current: Batch<T> | undefined;

  constructor(private readonly handOn: (payloads: string[], items: T[]) => void) {}

  add(payload: string, item: T): void {
    let batch = this.current;
    if (batch !== undefined && (batch.payloads.length >= BATCH_MESSAGES_MAX || batch.chars + payload.length > BATCH_CHARS_MAX)) {
      this.handOnIfCurrent(batch);
      batch = undefined;
    }
    if (batch === undefined) {
      const started: Batch<T> = { payloads: [], items: [], chars: 0 };
      this.current = batch = started;
      setImmediate(() => this.handOnIfCurrent(started));
    }
    batch.payloads.push(payload);
    batch.items.push(item);
    batch.chars += payload.length;
  }

  /** Hands on the batch being gathered now (before an event that must follow its messages, or a stop). */
  flush(): void {
    if (this.current !== undefined) this.handOnIfCurrent(this.current);
  }

  /** Once per batch: its setImmediate finds nothing to do after it was handed on early. */
  private handOnIfCurrent(batch: Batch<T>): void {
    if (this.current !== batch) return;
    this.current = undefined;
    this.handOn(batch.payloads, batch.items);
  }
}

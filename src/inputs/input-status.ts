/**
 * Where a network input stands and what it counted since it started: the `connection` and the counters
 * `inends/stats`, `/healthz` and `/metrics` show for UDP_SERVER, GENERIC_MQTT_SERVER and GENERIC_MQTT.
 * The shape is fixed (the UI reads it): {connection: {state, lastError, since}, messagesIn, stored,
 * refused, redelivered}.
 */
import type { InputConnectionState, NetworkInputStats } from '../scripts/shared/types.js';

/** An error message as stats show it: one line of at most 1 KB (contract 18). */
const ERROR_CHARS_MAX = 1024;

export class InputStatus {
  private state: InputConnectionState = 'stopped';
  private lastError: string | null = null;
  private sinceMs = Date.now();
  messagesIn = 0;
  stored = 0;
  refused = 0;
  redelivered = 0;

  /** A change of state starts a new `since`; the same state again keeps it (a retry is not news). */
  set(state: InputConnectionState, error?: unknown): void {
    if (error !== undefined) this.lastError = errorText(error);
    if (state === this.state) return;
    this.state = state;
    this.sinceMs = Date.now();
  }

  get current(): InputConnectionState {
    return this.state;
  }

  view(): NetworkInputStats {
    return {
      connection: { state: this.state, lastError: this.lastError, since: new Date(this.sinceMs).toISOString() },
      messagesIn: this.messagesIn,
      stored: this.stored,
      refused: this.refused,
      redelivered: this.redelivered,
    };
  }
}

export function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  const line = text.replace(/\s+/g, ' ');
  return line.length > ERROR_CHARS_MAX ? `${line.slice(0, ERROR_CHARS_MAX - 3)}...` : line;
}

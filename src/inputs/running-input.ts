/** What the engine holds of a started network input, and the log it is given. */
import type { InputStatus } from './input-status.js';

export type InputLog = (level: 'info' | 'warn' | 'error', obj: object, msg: string) => void;

export interface RunningInput {
  readonly status: InputStatus;
  /** Resolves once listening or connecting has begun; a failure shows in the status, never rejects. */
  start(): Promise<void>;
  /** Stops reading, closes sockets; messages not yet stored stay unacknowledged (their senders resend them). */
  stop(): Promise<void>;
}

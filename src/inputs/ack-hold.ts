/**
 * The acknowledgement of one message of the MQTT client input (mqtt-client.ts), held until the message's
 * records are stored. mqtt.js writes a QoS 1 PUBACK from the callback of `handleMessage` and reads the
 * next packet only once it is written. `capturePubacks` wraps the client's packet writer so that a PUBACK
 * written while a hold takes that callback is kept in the hold instead: mqtt.js reads on at once, and the
 * PUBACK goes out when the hold is sent. A QoS 0 message has no PUBACK; its hold only keeps its place.
 * The writer is mqtt.js's `_sendPacket` (5.x): without it no client is made (`canHold`), rather than one
 * that would acknowledge before storing.
 * Imports: mqtt only.
 */
import { MqttClient, type Packet } from 'mqtt';

type SendPacket = (this: MqttClient, packet: Packet, cb?: (err?: Error) => void, ...rest: unknown[]) => void;

export class AckHold {
  /** The hold whose `take` is running: the PUBACK mqtt.js writes meanwhile is its. */
  private static taking: AckHold | undefined;
  private puback: (() => void) | undefined;
  private taken = false;
  private settled = false;

  constructor(
    readonly client: MqttClient,
    readonly bytes: number,
  ) {}

  /** Whether mqtt.js's clients have the packet writer capturePubacks wraps: ask before making one. */
  static canHold(): boolean {
    return typeof (MqttClient.prototype as unknown as { _sendPacket?: unknown })._sendPacket === 'function';
  }

  /** Makes the PUBACKs `client` writes during a `take` go to that hold (once per client; canHold first). */
  static capturePubacks(client: MqttClient): void {
    const internals = client as unknown as { _sendPacket: SendPacket };
    const sendPacket = internals._sendPacket;
    internals._sendPacket = function (this: MqttClient, packet, cb, ...rest) {
      const hold = AckHold.taking;
      if (hold === undefined || packet.cmd !== 'puback') {
        sendPacket.call(this, packet, cb, ...rest);
        return;
      }
      hold.puback = () => sendPacket.call(this, packet, undefined, ...rest);
      // mqtt.js's "written": it reads the next packet.
      cb?.();
    };
  }

  /** Calls mqtt.js's handleMessage callback: its PUBACK, if any, is kept here, and mqtt.js reads on. */
  take(done: (err?: Error) => void): void {
    AckHold.taking = this;
    try {
      done();
    } finally {
      AckHold.taking = undefined;
    }
    this.taken = true;
  }

  /** The message is stored, or failed in a rule: it may be acknowledged. */
  settle(): void {
    this.settled = true;
  }

  /** Taken and settled: its PUBACK (if any) may go once every earlier one has. */
  get ready(): boolean {
    return this.taken && this.settled;
  }

  send(): void {
    const puback = this.puback;
    this.puback = undefined;
    puback?.();
  }
}

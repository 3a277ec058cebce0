/**
 * The engine's table of running network inputs (src/inputs/): one per UDP_SERVER, GENERIC_MQTT_SERVER
 * and GENERIC_MQTT input, started at start-up and on create, restarted on update (the old one stopped
 * first, so its port is free), stopped on delete and close. Starts and stops of one input run in order.
 */
import type { Inend, InputTlsFiles, LogFn, MqttClientConfig, MqttServerConfig, NetworkInputStats, UdpServerConfig } from '../scripts/shared/types.js';
import { named } from '../util/messages.js';
import type { InputSink } from './deliver.js';
import type { BrokerAuth } from './mqtt-broker.js';
import type { InputLog, RunningInput } from './running-input.js';

export interface NetworkInputsDeps {
  sinkFor(uuid: string): InputSink;
  authFor(uuid: string): BrokerAuth;
  log?: LogFn;
  /** The HTTP server's certificate and key, for brokers with config.tls. */
  tls?: InputTlsFiles;
}

export interface NetworkInputView {
  uuid: string;
  name: string;
  type: Inend['type'];
  stats: NetworkInputStats;
}

export class NetworkInputs {
  private readonly running = new Map<string, { input: RunningInput; name: string; type: Inend['type'] }>();
  /** The last start or stop of each input: the next one waits for it. */
  private readonly turns = new Map<string, Promise<void>>();
  private closed = false;

  constructor(private readonly deps: NetworkInputsDeps) {}

  /** Stops the input's running part if any, then starts the one its (new) config says. */
  restart(inend: Inend): Promise<void> {
    return this.inTurn(inend.uuid, async () => {
      await this.stopNow(inend.uuid);
      if (this.closed) return;
      const label = named(inend.name, inend.uuid);
      const input = await createInput(inend, label, {
        sink: this.deps.sinkFor(inend.uuid),
        auth: this.deps.authFor(inend.uuid),
        log: this.deps.log ?? (() => undefined),
        tls: this.deps.tls,
      });
      if (input === undefined) return;
      this.running.set(inend.uuid, { input, name: inend.name, type: inend.type });
      await input.start();
    });
  }

  stop(uuid: string): Promise<void> {
    return this.inTurn(uuid, () => this.stopNow(uuid));
  }

  /** Stops every input, those still starting too (their turn runs first); none starts after. */
  async stopAll(): Promise<void> {
    this.closed = true;
    const uuids = new Set([...this.running.keys(), ...this.turns.keys()]);
    await Promise.all([...uuids].map((uuid) => this.stop(uuid)));
  }

  stats(uuid: string): NetworkInputStats | undefined {
    return this.running.get(uuid)?.input.status.view();
  }

  list(): NetworkInputView[] {
    return [...this.running].map(([uuid, r]) => ({ uuid, name: r.name, type: r.type, stats: r.input.status.view() }));
  }

  private async stopNow(uuid: string): Promise<void> {
    const current = this.running.get(uuid);
    if (current === undefined) return;
    this.running.delete(uuid);
    await current.input.stop();
  }

  private inTurn(uuid: string, work: () => Promise<void>): Promise<void> {
    const next = (this.turns.get(uuid) ?? Promise.resolve()).then(work, work);
    const settled = next.catch(() => undefined);
    this.turns.set(uuid, settled);
    void settled.then(() => {
      if (this.turns.get(uuid) === settled) this.turns.delete(uuid);
    });
    return next;
  }
}

export interface InputDeps {
  sink: InputSink;
  /** For GENERIC_MQTT_SERVER: checks the password against the input's push token, reports failed logins. */
  auth: BrokerAuth;
  log: InputLog;
  tls?: InputTlsFiles;
}

/** `label` names the input in logs: `name (uuid)`. Undefined for an input type without a running part. */
export async function createInput(inend: Inend, label: string, deps: InputDeps): Promise<RunningInput | undefined> {
  // The configs were checked by src/scripts/input-configs.ts when the input was saved. The modules are
  // loaded with the first input of their type: aedes and mqtt.js cost memory a gateway without them keeps.
  switch (inend.type) {
    case 'UDP_SERVER': {
      const { UdpServerInput } = await import('./udp-server.js');
      return new UdpServerInput(label, inend.config as unknown as UdpServerConfig, deps.sink, deps.log);
    }
    case 'GENERIC_MQTT_SERVER': {
      const { MqttBrokerInput } = await import('./mqtt-broker.js');
      return new MqttBrokerInput(label, inend.config as unknown as MqttServerConfig, deps.sink, deps.auth, deps.log, deps.tls);
    }
    case 'GENERIC_MQTT': {
      const { MqttClientInput } = await import('./mqtt-client.js');
      return new MqttClientInput(label, inend.config as unknown as MqttClientConfig, deps.sink, deps.log);
    }
    default:
      return undefined;
  }
}

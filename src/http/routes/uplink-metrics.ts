/**
 * The fleet uplink in `/metrics` (contract 17): read from Uplink.status() at scrape time, like the
 * store's gauges. `model` is the model uuid; nothing is registered while the uplink is off.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { UplinkView } from '../core/deps.js';
import type { UplinkStatus } from '../../uplink/uplink.js';

type ModelStatus = UplinkStatus['models'][number];

export function registerUplinkMetrics(registry: Registry, uplink: UplinkView): void {
  const registers = [registry];
  new Gauge({
    name: 'edge_uplink_connected',
    help: '1 while the uplink is connected to a hub server, else 0.',
    registers,
    collect() {
      this.set(uplink.status().connected ? 1 : 0);
    },
  });
  new Gauge({
    name: 'edge_uplink_inflight_bytes',
    help: 'Bytes of messages sent and not yet acknowledged, over every model.',
    registers,
    collect() {
      this.set(uplink.status().inflightBytes);
    },
  });
  const perModel = (kind: 'gauge' | 'counter', name: string, help: string, pick: (m: ModelStatus) => number): void => {
    const Metric = kind === 'gauge' ? Gauge : Counter;
    new Metric({
      name,
      help,
      labelNames: ['model'],
      registers,
      collect(this: Gauge | Counter) {
        this.reset();
        for (const m of uplink.status().models) {
          if (this instanceof Gauge) this.set({ model: m.uuid }, pick(m));
          else this.inc({ model: m.uuid }, pick(m));
        }
      },
    });
  };
  perModel('gauge', 'edge_uplink_lag_records', 'Records durable here that the hub has not acknowledged.', (m) => m.lagRecords);
  perModel('gauge', 'edge_uplink_lag_seconds', 'Age of the oldest record the hub has not acknowledged.', (m) => m.lagSeconds);
  perModel('gauge', 'edge_uplink_backlog_bytes', 'Bytes of the log the hub has not acknowledged (estimated from the mean record size).', (m) => m.backlogBytes);
  perModel('counter', 'edge_uplink_acked_records_total', 'Records the hub acknowledged since the start.', (m) => m.ackedRecords);
  perModel('counter', 'edge_uplink_duplicate_acks_total', 'Messages the hub acknowledged as duplicates (sent again after a lost ack).', (m) => m.duplicateAcks);
  perModel('counter', 'edge_uplink_dropped_records_total', 'Records removed by retention before the hub acknowledged them (backlog_max_bytes), each named in a gap message.', (m) => m.droppedRecords);
  perModel('counter', 'edge_uplink_resends_total', 'Times a record changed by update-last after it was read was read and sent again.', (m) => m.resends);
}

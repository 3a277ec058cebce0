import type { Row } from './baselines/sqlite-store.js';

/** The sensor model every benchmark writes: 6 attributes, about 100 bytes a record. */
export const FIELDS = ['device_id', 'temperature', 'humidity', 'pressure', 'battery', 'status'] as const;

export function sensorRecord(i: number): Row {
  return {
    device_id: `gw-dev-${i % 64}`,
    temperature: 20 + (i % 1000) / 100,
    humidity: 40 + (i % 500) / 10,
    pressure: 1013.25 - (i % 300) / 10,
    battery: 100 - (i % 100),
    status: i % 97 === 0 ? 'alarm' : 'ok',
  };
}

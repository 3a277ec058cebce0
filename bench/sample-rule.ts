/**
 * The workload of bench:scripts and bench:memory: RHILEX's sample rule (fixtures/lua/rhilex-sample.lua)
 * over Modbus-shaped payloads, set up through the admin API as a user would.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from './report.js';

/** The admin token the benches write into their service's config. */
export const BENCH_ADMIN = 'bench-admin-token-0123456789abcdef';
const TAGS = ['t1', 't2', 't3', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];
/** The attributes the sample rule stores. */
export const SAMPLE_ATTRIBUTES = ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];
/** The model uuid written in the sample, replaced by the model the bench creates. */
const SAMPLE_MODEL = 'SCHEMAZ848ZRDG';

export function readSampleRule(): Promise<string> {
  return readFile(join(repoRoot, 'fixtures', 'lua', 'rhilex-sample.lua'), 'utf8');
}

/** The sample's Actions storing into `model`. */
export function sampleActions(sample: string, model: string): string {
  return sample.replaceAll(SAMPLE_MODEL, model);
}

/** A Modbus-shaped payload, values varying with i as a PLC's would; the sample rule stores one record per payload. */
export function samplePayload(i: number): string {
  return JSON.stringify(TAGS.map((tag, t) => ({ tag, value: Math.round((20 + t * 0.5 + (i % 97) / 100) * 100) / 100 })));
}

/** An admin call of the service on 127.0.0.1:`port`; its `data`, or an error naming the call. */
export async function adminCall(port: number, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { Authorization: `Bearer ${BENCH_ADMIN}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data: Record<string, unknown> };
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** A model of the sample rule's five attributes, an HTTP input and the sample rule reading it. */
export async function setUpSampleRule(port: number, sample: string): Promise<{ inend: string; token: string }> {
  const model = (await adminCall(port, 'POST', '/api/v1/schema/create', { name: 'water' })).uuid as string;
  for (const name of SAMPLE_ATTRIBUTES) await adminCall(port, 'POST', '/api/v1/schema/properties/create', { schemaId: model, name, type: 'FLOAT' });
  await adminCall(port, 'POST', `/api/v1/schema/publish?uuid=${model}`);
  const created = await adminCall(port, 'POST', '/api/v1/inends/create', { name: 'plc', type: 'HTTP', description: '' });
  const inend = created.uuid as string;
  await adminCall(port, 'POST', '/api/v1/rules/create', {
    name: 'sample',
    description: '',
    fromSource: [inend],
    actions: sampleActions(sample, model),
    success: '',
    failed: '',
  });
  return { inend, token: created.token as string };
}

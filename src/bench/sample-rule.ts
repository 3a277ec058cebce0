/**
 * The workload: RHILEX's sample rule (fixtures/lua/rhilex-sample.lua, which the release ships for
 * docs/getting-started.md) over Modbus-shaped payloads, set up through the admin API as that guide does
 * by hand.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { BenchError } from '../errors.js';
import type { Client } from './client.js';

/** From dist/bench/ in an install as in a checkout. */
const SAMPLE_FILE = fileURLToPath(new URL('../../fixtures/lua/rhilex-sample.lua', import.meta.url));

/** The model uuid written in the sample, replaced by the model the bench creates. */
const SAMPLE_MODEL = 'SCHEMAZ848ZRDG';
const TAGS = ['t1', 't2', 't3', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];
/** The attributes the sample rule stores, all FLOAT. */
export const SAMPLE_ATTRIBUTES = ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];

/** A payload the sample takes, values varying with i as a PLC's would; one record per payload. */
export function samplePayload(i: number): string {
  return JSON.stringify(TAGS.map((tag, t) => ({ tag, value: Math.round((20 + t * 0.5 + (i % 97) / 100) * 100) / 100 })));
}

/** A published model of the sample's five FLOAT attributes; its uuid. */
export async function createSampleModel(client: Client, name: string): Promise<string> {
  const model = (await client.admin('POST', '/api/v1/schema/create', { name, description: 'edge-datacenter bench' })).uuid as string;
  for (const attribute of SAMPLE_ATTRIBUTES) {
    await client.admin('POST', '/api/v1/schema/properties/create', { schemaId: model, name: attribute, type: 'FLOAT' });
  }
  await client.admin('POST', `/api/v1/schema/publish?uuid=${model}`);
  return model;
}

export interface SampleInput {
  model: string;
  inend: string;
  /** The input's push token. */
  token: string;
}

async function sampleRule(): Promise<string> {
  try {
    return await readFile(SAMPLE_FILE, 'utf8');
  } catch (err) {
    throw new BenchError(`cannot read the sample rule the bench runs, ${SAMPLE_FILE}: ${(err as Error).message}`);
  }
}

/** A model, an HTTP input and the sample rule storing what the input receives into the model. */
export async function setUpSampleRule(client: Client): Promise<SampleInput> {
  const rule = await sampleRule();
  const model = await createSampleModel(client, 'bench water');
  const created = await client.admin('POST', '/api/v1/inends/create', { name: 'bench plc', type: 'HTTP', description: '', config: {} });
  const inend = created.uuid as string;
  await client.admin('POST', '/api/v1/rules/create', {
    name: 'bench sample',
    description: 'RHILEX sample',
    fromSource: [inend],
    actions: rule.replaceAll(SAMPLE_MODEL, model),
    success: '',
    failed: '',
  });
  return { model, inend, token: created.token as string };
}

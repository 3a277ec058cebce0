/**
 * The workload: RHILEX's sample rule (fixtures/lua/rhilex-sample.lua, which a production install does not
 * ship, hence the copy here; test/bench/sample-rule.test.ts keeps the two the same) over Modbus-shaped
 * payloads, set up through the admin API as docs/getting-started.md does by hand.
 */
import type { Client } from './client.js';

/** fixtures/lua/rhilex-sample.lua, byte for byte. */
export const SAMPLE_RULE = `-- The rule script of RHILEX's data-center documentation, unchanged except for the model uuid,
-- which tests replace: SCHEMAZ848ZRDG.
Actions = {
    function(args)
        local dataT, err = json:J2T(args);
        if (err ~= nil) then
            Throw(err);
            return true, args;
        end;
        local schemaData = {};
        for _, row in ipairs(dataT) do
            schemaData[row.tag] = row.value;
        end;
        local err = rds:Save("SCHEMAZ848ZRDG", {
            temp = (schemaData.t1 + schemaData.t2 + schemaData.t3) / 3,
            resistivity = schemaData.resistivity,
            conductivity = schemaData.conductivity,
            dissolved_oxygen = schemaData.dissolved_oxygen,
            ph_value = schemaData.ph_value
        });
        if (err ~= nil) then
            Throw(err);
            return 0;
        end;
        return true, args;
    end
}
`;

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

/** A model, an HTTP input and the sample rule storing what the input receives into the model. */
export async function setUpSampleRule(client: Client): Promise<SampleInput> {
  const model = await createSampleModel(client, 'bench water');
  const created = await client.admin('POST', '/api/v1/inends/create', { name: 'bench plc', type: 'HTTP', description: '', config: {} });
  const inend = created.uuid as string;
  await client.admin('POST', '/api/v1/rules/create', {
    name: 'bench sample',
    description: 'RHILEX sample',
    fromSource: [inend],
    actions: SAMPLE_RULE.replaceAll(SAMPLE_MODEL, model),
    success: '',
    failed: '',
  });
  return { model, inend, token: created.token as string };
}

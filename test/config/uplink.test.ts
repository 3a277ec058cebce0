import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useConfigDir } from '../support/config-dir.js';

const tmp = useConfigDir('edc-config-uplink-');
const load = tmp.load;

describe('[uplink]', () => {
  it('is off by default and generates no gateway id then', async () => {
    const { config } = await load('');
    expect(config.uplink).toEqual({ engine: 'off', servers: [], credentials: '', subjectPrefix: 'edc', gatewayId: '', models: [], backlogMaxBytes: 0 });
  });

  it('reads every key; a relative credentials file starts at the config file', async () => {
    const { config } = await load(
      '[uplink]\nengine = nats\nservers = nats://10.0.0.1:4222, hub-2:4222\nservers = tls://hub-3.example:4443\ncredentials = gw.creds\n' +
        'subject_prefix = plant.edc\ngateway_id = line-7\nmodels = SCHEMAZ848ZRDG, SCHEMA25C5JMSE\nbacklog_max_bytes = 1000000\n',
    );
    expect(config.uplink).toEqual({
      engine: 'nats',
      servers: ['nats://10.0.0.1:4222', 'hub-2:4222', 'tls://hub-3.example:4443'],
      credentials: join(tmp.path, 'gw.creds'),
      subjectPrefix: 'plant.edc',
      gatewayId: 'line-7',
      models: ['SCHEMAZ848ZRDG', 'SCHEMA25C5JMSE'],
      backlogMaxBytes: 1000000,
    });
  });

  it('generates the gateway id once into the data directory and keeps it', async () => {
    const first = (await load('[uplink]\nengine = nats\nservers = 127.0.0.1:4222\n')).config.uplink.gatewayId;
    expect(first).toMatch(/^gw-[0-9a-f]{12}$/);
    expect((await readFile(join(tmp.path, 'data', 'uplink', 'gateway-id'), 'utf8')).trim()).toBe(first);
    expect((await load('[uplink]\nengine = nats\nservers = 127.0.0.1:4222\n')).config.uplink.gatewayId).toBe(first);
  });

  it('models = * means every model', async () => {
    expect((await load('[uplink]\nmodels = *\n')).config.uplink.models).toEqual([]);
  });

  it.each([
    ['[uplink]\nengine = nats\n', /\[uplink\] servers is missing: engine = nats needs at least one hub server/],
    ['[uplink]\nengine = kafka\n', /\[uplink\] engine must be one of off or nats/],
    ['[uplink]\nservers = http://hub:4222\n', /\[uplink\] servers must list nats:\/\/host:port.*got "http:\/\/hub:4222"/],
    ['[uplink]\nsubject_prefix = edc.>\n', /\[uplink\] subject_prefix must be subject tokens.*got "edc\.>"/],
    ['[uplink]\ngateway_id = line 7\n', /\[uplink\] gateway_id must be 1 to 64 letters, digits, _ or -, got "line 7"/],
    ['[uplink]\nmodels = *, SCHEMAZ848ZRDG\n', /\[uplink\] models must be \* alone or a list of model uuids/],
    ['[uplink]\nmodels = temperature\n', /\[uplink\] models must list model uuids such as SCHEMAZ848ZRDG, got "temperature"/],
    ['[uplink]\nbacklog_max_bytes = -1\n', /\[uplink\] backlog_max_bytes must be an integer/],
  ])('refuses %j naming the key and the rule', async (text, message) => {
    await expect(load(text)).rejects.toThrow(message);
  });

  it('takes EDGE_DATACENTER_UPLINK_* from the environment', async () => {
    const { config } = await load('', { EDGE_DATACENTER_UPLINK_ENGINE: 'nats', EDGE_DATACENTER_UPLINK_SERVERS: '127.0.0.1:4222', EDGE_DATACENTER_UPLINK_GATEWAY_ID: 'gw1' });
    expect(config.uplink).toMatchObject({ engine: 'nats', servers: ['127.0.0.1:4222'], gatewayId: 'gw1' });
  });
});

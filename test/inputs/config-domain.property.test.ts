/**
 * The domain of each network input's config through the real HTTP API (fast-check): boundaries, huge,
 * negative, fractional and malformed values, wrong types, missing and extra keys. Every answer is 200 or
 * a 4xx naming a config key, never a 5xx; what is accepted lies inside the domain; the service answers
 * afterwards. Created inputs are deleted at once (they listen or connect for real meanwhile).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
});
afterAll(async () => {
  await svc?.close();
});

const RUNS = Number(process.env.INPUT_CONFIG_CASES ?? 150);

/** Numbers around every boundary of the domains, and the hostile ones. */
const number = fc.oneof(
  fc.constantFrom(0, 1, -1, 1.5, 65_535, 65_536, 65_507, 65_508, 1024, 1_048_576, 1_048_577, 10_000, 10_001, 1e308, -1e308, 2 ** 53, 0.1, -0),
  fc.integer({ min: -100_000, max: 2_000_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const text = fc.oneof(
  fc.constantFrom('', '127.0.0.1', '0.0.0.0', '::', '::1', 'localhost', '999.1.1.1', 'a\u0000b', 'plant/#', '#', '+/x', 'a/#/b', 'a+/b', 'x'.repeat(2000)),
  // Hosts: names a broker may have, and texts that make no URL.
  fc.constantFrom('plc-01.plant.local', 'my_broker', 'broker.', '[', ']', '[::1]', 'a:b', 'a b', 'a..b', '-x', 'x-', 'h%41', 'a@b', `${'a'.repeat(64)}.b`),
  fc.string({ maxLength: 40 }),
);
const value = fc.oneof(number, text, fc.boolean(), fc.constant(null), fc.array(text, { maxLength: 3 }), fc.constant({}), fc.array(fc.constant('t'), { minLength: 65, maxLength: 70 }));

/** A good config of each type on port 2 (the fixed input of each type holds port 1). */
const VALID = {
  UDP_SERVER: { host: '127.0.0.1', port: 2, maxDataLength: 1024 },
  GENERIC_MQTT_SERVER: { host: '127.0.0.1', port: 2, anonymous: true },
  GENERIC_MQTT: { host: '127.0.0.1', port: 2, clientId: 'c', qos: 1, subTopics: ['a/#'] },
} as const;

/** A good config with one key set to anything or removed, or keys of the type (plus a stranger) with any values, or not an object. */
function configOf(type: keyof typeof VALID, keys: string[]): fc.Arbitrary<unknown> {
  const oneBad = fc.tuple(fc.constantFrom(...keys, 'extra'), fc.option(value, { nil: undefined })).map(([k, v]) => ({ ...VALID[type], [k]: v }));
  const record = fc.dictionary(fc.constantFrom(...keys, 'extra'), value, { maxKeys: keys.length + 1 });
  return fc.oneof({ weight: 6, arbitrary: oneBad }, { weight: 3, arbitrary: record }, { weight: 1, arbitrary: value });
}

const TYPES = {
  UDP_SERVER: ['host', 'port', 'maxDataLength'],
  GENERIC_MQTT_SERVER: ['serverName', 'host', 'port', 'anonymous', 'tls', 'maxClients', 'maxMessageBytes'],
  GENERIC_MQTT: ['host', 'port', 'clientId', 'username', 'password', 'qos', 'subTopics', 'tls', 'maxMessageBytes'],
} as const;

function insideDomain(type: keyof typeof TYPES, config: Record<string, any>): void {
  const int = (v: unknown, min: number, max: number): void => {
    expect(Number.isInteger(v)).toBe(true);
    expect(v as number).toBeGreaterThanOrEqual(min);
    expect(v as number).toBeLessThanOrEqual(max);
  };
  int(config.port, 1, 65_535);
  if (type === 'UDP_SERVER') int(config.maxDataLength, 1, 65_507);
  if (type === 'GENERIC_MQTT_SERVER') {
    int(config.maxClients, 1, 10_000);
    int(config.maxMessageBytes, 1, 1_048_576);
    expect(typeof config.anonymous).toBe('boolean');
  }
  if (type !== 'UDP_SERVER') expect(typeof config.tls).toBe('boolean');
  if (type === 'GENERIC_MQTT') {
    expect([0, 1, 2]).toContain(config.qos);
    expect(config.subTopics.length).toBeGreaterThan(0);
    expect(config.subTopics.length).toBeLessThanOrEqual(64);
    expect(typeof config.clientId === 'string' && config.clientId.length > 0).toBe(true);
    // A host taken makes a broker URL (a text that made none was a 500 when the input started).
    expect(() => new URL(`mqtt://${config.host.includes(':') ? `[${config.host}]` : config.host}:1883`)).not.toThrow();
  }
}

describe('network input configs through inends/create and inends/update', () => {
  for (const [type, keys] of Object.entries(TYPES) as Array<[keyof typeof TYPES, readonly string[]]>) {
    it(`${type}: 200 inside the domain or a 400 naming the key, never a 5xx`, async () => {
      // One input of the type to update with the same values.
      const base = { UDP_SERVER: { host: '127.0.0.1', port: 1 }, GENERIC_MQTT_SERVER: { host: '127.0.0.1', port: 1, anonymous: true }, GENERIC_MQTT: { host: '127.0.0.1', port: 1, subTopics: ['a'] } }[type];
      const existing = (await call(svc.base, '/api/v1/inends/create', { method: 'POST', body: { name: `fixed-${type}`, type, config: base } })).body.data.uuid as string;
      let accepted = 0;
      await fc.assert(
        fc.asyncProperty(configOf(type, [...keys]), fc.boolean(), async (config, update) => {
          const answer = update
            ? await call(svc.base, '/api/v1/inends/update', { method: 'PUT', body: { uuid: existing, config } })
            : await call(svc.base, '/api/v1/inends/create', { method: 'POST', body: { name: `p-${type}`, type, config } });
          expect(answer.status, answer.text).toBeLessThan(500);
          if (answer.status === 200) {
            accepted++;
            const stored = update ? answer.body.data.config : (await call(svc.base, `/api/v1/inends/detail?uuid=${answer.body.data.uuid}`)).body.data.config;
            insideDomain(type, stored);
            if (!update) expect((await call(svc.base, `/api/v1/inends/del?uuid=${answer.body.data.uuid}`, { method: 'DELETE' })).status).toBe(200);
          } else {
            expect(answer.status).toBe(400);
            expect(answer.body.msg).toMatch(/config/);
          }
        }),
        { numRuns: RUNS },
      );
      // Some values of the domain were drawn and taken (the test sees both sides).
      expect(accepted).toBeGreaterThan(0);
      expect((await call(svc.base, '/api/v1/inends/list')).status).toBe(200);
    }, 300_000);
  }

  it('GENERIC_MQTT: a host that makes no broker URL is a 400 naming config.host; names and addresses are taken', async () => {
    for (const host of ['[', ']', '[::1]', 'a:b', 'a b', 'a..b', '-x', 'h%41', 'a@b', 'plant/#', `${'a'.repeat(64)}.b`]) {
      const answer = await call(svc.base, '/api/v1/inends/create', { method: 'POST', body: { name: 'h', type: 'GENERIC_MQTT', config: { ...VALID.GENERIC_MQTT, host } } });
      expect(answer.status, `${host}: ${answer.text}`).toBe(400);
      expect(answer.body.msg).toMatch(/^config\.host must be a host name/);
    }
    for (const host of ['plc-01.plant.local', 'my_broker', 'broker.', 'localhost', '10.0.0.7', '::1', 'fe80::1']) {
      const answer = await call(svc.base, '/api/v1/inends/create', { method: 'POST', body: { name: 'h', type: 'GENERIC_MQTT', config: { ...VALID.GENERIC_MQTT, host } } });
      expect(answer.status, `${host}: ${answer.text}`).toBe(200);
      expect((await call(svc.base, `/api/v1/inends/del?uuid=${answer.body.data.uuid}`, { method: 'DELETE' })).status).toBe(200);
    }
  });

  it('refuses RHILEX types it does not build with a 400 naming them', async () => {
    for (const type of ['TCP_SERVER', 'COAP_SERVER', 'GRPC_SERVER']) {
      const answer = await call(svc.base, '/api/v1/inends/create', { method: 'POST', body: { name: 'x', type, config: {} } });
      expect(answer.status).toBe(400);
      expect(answer.body.msg).toContain(`type ${type} is a RHILEX input type this service does not support`);
    }
  });
});

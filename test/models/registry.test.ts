import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError, NotFoundError, StateError } from '../../src/errors.js';
import { ModelRegistry } from '../../src/models/index.js';
import type { Store } from '../../src/store/index.js';
import { openStore } from './helpers.js';

let dir: string;
let store: Store;
let registry: ModelRegistry;
const exists = (path: string) => stat(path).then(() => true, () => false);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edc-registry-'));
  store = await openStore(join(dir, 'store'));
  registry = await ModelRegistry.open({ dataDir: dir, store });
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function expectError(promise: Promise<unknown> | (() => unknown), type: Function, message: string | RegExp) {
  const error = await (typeof promise === 'function' ? Promise.resolve().then(promise) : promise).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  if (typeof message === 'string') expect((error as Error).message).toBe(message);
  else expect((error as Error).message).toMatch(message);
}

const attr = (schemaId: string, name: string, extra: Record<string, unknown> = {}) =>
  registry.createAttribute({ schemaId, name, label: name, type: 'FLOAT', rw: 'R', unit: '', description: '', ...extra });

describe('models', () => {
  it('create returns the model with a SCHEMA id; list keeps insertion order; get and update', async () => {
    const a = await registry.create({ name: 'water', description: 'tank 1' });
    const b = await registry.create({ name: 'air' });
    expect(a.uuid).toMatch(/^SCHEMA[2-9A-Z]{8}$/);
    expect(a).toMatchObject({ name: 'water', description: 'tank 1', published: false, attributes: [] });
    expect(registry.list().map((m) => m.name)).toEqual(['water', 'air']);
    expect(registry.get(b.uuid).description).toBe('');
    const updated = await registry.update({ uuid: a.uuid, description: '' });
    expect(updated).toMatchObject({ name: 'water', description: '' });
    expect((await registry.update({ uuid: a.uuid, name: 'renamed' })).name).toBe('renamed');
  });

  it('refuses bad model bodies naming the field', async () => {
    await expectError(registry.create({ name: '' }), InvalidArgumentError, 'name must be a non-empty string of at most 128 characters, got ""');
    await expectError(registry.create({ name: 'x'.repeat(129) }), InvalidArgumentError, /^name must be a non-empty string of at most 128/);
    await expectError(registry.create({ name: 5 }), InvalidArgumentError, /, got 5$/);
    await expectError(registry.create({ name: 'ok', description: [] }), InvalidArgumentError, 'description must be a string, got an array');
    await expectError(registry.create(null as never), InvalidArgumentError, 'request body must be a JSON object, got null');
    await expectError(registry.create([] as never), InvalidArgumentError, 'request body must be a JSON object, got an array');
    await expectError(registry.update({ uuid: 7 }), InvalidArgumentError, 'uuid must be a non-empty string, got 7');
    await expectError(registry.update({ uuid: 'SCHEMA22222222' }), NotFoundError, 'model SCHEMA22222222 not found');
    expect(() => registry.get('nope')).toThrow(NotFoundError);
  });

  it('returned models are frozen snapshots', async () => {
    const m = await registry.create({ name: 'm' });
    expect(() => (m as { name: string }).name = 'x').toThrow(TypeError);
    registry.list().pop();
    expect(registry.list()).toHaveLength(1);
  });
});

describe('attributes', () => {
  it('create fills RHILEX defaults and converts the UI string defaults', async () => {
    const m = await registry.create({ name: 'm' });
    const defaults = {
      INTEGER: 5, FLOAT: 0.5, BOOL: false, STRING: '0', GEO: '0,0',
    };
    for (const type of Object.keys(defaults) as Array<keyof typeof defaults>) {
      const uiDefault = type === 'INTEGER' ? '5' : type === 'FLOAT' ? '0.5' : '0';
      const a = await registry.createAttribute({
        schemaId: m.uuid, name: `a_${type}`, label: 'L', type, rw: 'RW', unit: 'u', description: 'd',
        rule: { defaultValue: uiDefault, max: 0, min: 0, trueLabel: '', falseLabel: '', round: 0, latitude: 1 },
      });
      expect(a.rule.defaultValue).toBe(defaults[type]);
    }
    const plain = await registry.createAttribute({ schemaId: m.uuid, name: 'plain', type: 'INTEGER' });
    expect(plain).toEqual({
      uuid: plain.uuid, schemaId: m.uuid, label: '', name: 'plain', description: '', type: 'INTEGER', rw: 'R', unit: '',
      rule: { defaultValue: 0, max: 0, min: 0, trueLabel: '', falseLabel: '', round: 0 },
    });
    expect(plain.uuid).toMatch(/^PROPER[2-9A-Z]{8}$/);
    expect(registry.listAttributes(m.uuid).map((a) => a.name)).toEqual(['a_INTEGER', 'a_FLOAT', 'a_BOOL', 'a_STRING', 'a_GEO', 'plain']);
    expect(registry.getAttribute(plain.uuid)).toEqual(plain);
  });

  it.each([
    [{ name: '1abc' }, 'attribute name must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$, got "1abc"'],
    [{ name: 'a-b' }, 'attribute name must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$, got "a-b"'],
    [{ name: 'a'.repeat(65) }, /^attribute name must match/],
    [{ name: 'id' }, 'attribute name "id" is reserved: id and create_at are set by the store'],
    [{ name: 'Create_At' }, 'attribute name "Create_At" is reserved: id and create_at are set by the store'],
    [{ name: '__proto__' }, 'attribute name "__proto__" is not allowed: it names a JavaScript object\'s prototype'],
    [{ type: 'INT' }, 'type must be one of INTEGER, FLOAT, BOOL, STRING or GEO, got "INT"'],
    [{ type: undefined }, 'type must be one of INTEGER, FLOAT, BOOL, STRING or GEO, got nothing'],
    [{ rw: 'X' }, 'rw must be one of R, W or RW, got "X"'],
    [{ label: 3 }, 'label must be a string, got 3'],
    [{ rule: 'x' }, 'rule must be a JSON object, got "x"'],
    [{ rule: { min: 1.5 } }, 'rule.min must be an integer, got 1.5'],
    [{ rule: { max: '10' } }, 'rule.max must be an integer, got "10"'],
    [{ rule: { round: 16 } }, 'rule.round must be an integer in 0..15, got 16'],
    [{ rule: { min: 5, max: 1 } }, 'rule.max must be at least rule.min (5), got 1; min and max both 0 mean no bound'],
    [{ type: 'STRING', rule: { max: -1 } }, /^rule.max must be at least 0 for STRING, got -1; /],
    [{ rule: { defaultValue: 'abc' } }, 'rule.defaultValue must be a number for FLOAT, got "abc"'],
    [{ rule: { defaultValue: ' 1' } }, 'rule.defaultValue must be a number for FLOAT, got " 1"'],
    [{ type: 'INTEGER', rule: { defaultValue: '1.5' } }, 'rule.defaultValue must be an integer for INTEGER, got "1.5"'],
    [{ type: 'BOOL', rule: { defaultValue: 'yes' } }, 'rule.defaultValue must be true or false for BOOL, got "yes"'],
    [{ type: 'STRING', rule: { defaultValue: 0 } }, 'rule.defaultValue must be a string for STRING, got 0'],
    [{ type: 'GEO', rule: { defaultValue: '100,0' } }, 'rule.defaultValue must be "lat,lng" with lat in -90..90 and lng in -180..180 for GEO, got "100,0"'],
    [{ rule: { trueLabel: 1 } }, 'rule.trueLabel must be a string, got 1'],
  ])('refuses %j', async (extra, message) => {
    const m = await registry.create({ name: 'm' });
    await expectError(attr(m.uuid, 'ok', extra), InvalidArgumentError, message);
    expect(registry.listAttributes(m.uuid)).toEqual([]);
  });

  it('names are unique case-insensitively, on create and update (excluding itself)', async () => {
    const m = await registry.create({ name: 'm' });
    const temp = await attr(m.uuid, 'temp');
    const hum = await attr(m.uuid, 'hum');
    await expectError(attr(m.uuid, 'TEMP'), InvalidArgumentError,
      `attribute name "TEMP" is already used in model ${m.name} (${m.uuid}) (names are case-insensitive)`);
    await expectError(registry.updateAttribute({ uuid: hum.uuid, name: 'Temp' }), InvalidArgumentError, /"Temp" is already used/);
    const renamed = await registry.updateAttribute({ uuid: temp.uuid, name: 'Temp' });
    expect(renamed.name).toBe('Temp');
    const other = await registry.create({ name: 'other' });
    await attr(other.uuid, 'temp');
  });

  it('update keeps absent fields and the position, replaces a given rule, resets the default on a type change', async () => {
    const m = await registry.create({ name: 'm' });
    const a = await attr(m.uuid, 'a', { unit: '℃', rule: { defaultValue: 2.5, min: -10, max: 10, round: 1 } });
    await attr(m.uuid, 'b');
    const labelled = await registry.updateAttribute({ uuid: a.uuid, label: 'new' });
    expect(labelled).toEqual({ ...a, label: 'new' });
    const retyped = await registry.updateAttribute({ uuid: a.uuid, type: 'STRING' });
    expect(retyped.rule).toEqual({ ...a.rule, defaultValue: '' });
    const ruled = await registry.updateAttribute({ uuid: a.uuid, schemaId: m.uuid, rule: { max: 20 } });
    expect(ruled.rule).toEqual({ defaultValue: '', max: 20, min: 0, trueLabel: '', falseLabel: '', round: 0 });
    expect(registry.listAttributes(m.uuid).map((x) => x.name)).toEqual(['a', 'b']);
    await expectError(registry.updateAttribute({ uuid: a.uuid, schemaId: 'SCHEMA22222222' }), InvalidArgumentError,
      `schemaId cannot change: attribute ${a.uuid} belongs to model ${m.uuid}, got "SCHEMA22222222"`);
    await expectError(registry.updateAttribute({ uuid: 'PROPER22222222' }), NotFoundError, 'attribute PROPER22222222 not found');
    await expectError(registry.updateAttribute({}), InvalidArgumentError, 'uuid must be a non-empty string, got nothing');
  });

  it('delete removes the attribute; unknown ids are 404', async () => {
    const m = await registry.create({ name: 'm' });
    const a = await attr(m.uuid, 'a');
    await registry.deleteAttribute(a.uuid);
    expect(registry.listAttributes(m.uuid)).toEqual([]);
    await expectError(registry.deleteAttribute(a.uuid), NotFoundError, `attribute ${a.uuid} not found`);
    await expectError(attr('SCHEMA22222222', 'x'), NotFoundError, 'model SCHEMA22222222 not found');
    await expectError(registry.createAttribute({ name: 'x', type: 'FLOAT' }), InvalidArgumentError,
      'schemaId must be a non-empty string, got nothing');
    expect(() => registry.listAttributes('SCHEMA22222222')).toThrow(NotFoundError);
  });
});

describe('lifecycle', () => {
  it('publish needs an attribute, opens the log with the fields in order; name and type lock, templates need a draft', async () => {
    const m = await registry.create({ name: 'm' });
    await expectError(registry.publish(m.uuid), InvalidArgumentError, `model ${m.name} (${m.uuid}) needs at least one attribute to be published`);
    await expectError(() => registry.log(m.uuid), StateError, `model ${m.name} (${m.uuid}) is not published`);
    const a = await attr(m.uuid, 'temp');
    await attr(m.uuid, 'hum');
    const published = await registry.publish(m.uuid);
    expect(published.published).toBe(true);
    expect(registry.log(m.uuid)).toBe(store.model(m.uuid));
    expect(registry.log(m.uuid).fields).toEqual(['temp', 'hum']);

    const locked = `model ${m.name} (${m.uuid}) is published; its attributes cannot change (fix returns it to draft)`;
    await expectError(registry.publish(m.uuid), StateError, `model ${m.name} (${m.uuid}) is already published`);
    expect((await registry.updateAttribute({ uuid: a.uuid, label: 'x' })).label).toBe('x');
    await expectError(registry.updateAttribute({ uuid: a.uuid, name: 'x' }), StateError, /its name and type cannot change/);
    await expectError(registry.updateAttribute({ uuid: a.uuid, type: 'BOOL' }), StateError, /its name and type cannot change/);
    await attr(m.uuid, 'x');
    expect(registry.log(m.uuid).fields).toEqual(['temp', 'hum', 'x']);
    await registry.deleteAttribute(a.uuid);
    expect(registry.log(m.uuid).fields).toEqual(['hum', 'x']);
    await expectError(registry.applyTemplate(m.uuid, 'TEMP_HUMIDITY'), StateError, locked);
    expect((await registry.update({ uuid: m.uuid, name: 'still editable' })).name).toBe('still editable');
    expect(() => registry.log('SCHEMA22222222')).toThrow(NotFoundError);
  });

  it('fix needs confirm === true, drops the data and returns to draft keeping the attributes', async () => {
    const m = await registry.create({ name: 'm' });
    await attr(m.uuid, 'temp');
    await registry.publish(m.uuid);
    for (const confirm of [undefined, 'true', 1, false]) {
      await expectError(registry.fix(m.uuid, confirm), InvalidArgumentError, /^confirm must be true, got .*: fix deletes every record of model/);
    }
    expect(registry.get(m.uuid).published).toBe(true);
    registry.log(m.uuid).save({ temp: 1 });
    await registry.log(m.uuid).durable();
    const draft = await registry.fix(m.uuid, true);
    expect(draft.published).toBe(false);
    expect(draft.attributes.map((a) => a.name)).toEqual(['temp']);
    expect(store.model(m.uuid)).toBeUndefined();
    await attr(m.uuid, 'hum');
    await registry.publish(m.uuid);
    expect(registry.log(m.uuid).fields).toEqual(['temp', 'hum']);
    expect(registry.log(m.uuid).stats().total).toBe(0);
    await expectError(registry.fix('SCHEMA22222222', true), NotFoundError, 'model SCHEMA22222222 not found');
  });

  it('delete removes metadata and data', async () => {
    const m = await registry.create({ name: 'm' });
    await attr(m.uuid, 'temp');
    await registry.publish(m.uuid);
    registry.log(m.uuid).save({ temp: 1 });
    await registry.log(m.uuid).durable();
    expect(await exists(join(dir, 'store', m.uuid))).toBe(true);
    await registry.delete(m.uuid);
    expect(registry.list()).toEqual([]);
    expect(store.model(m.uuid)).toBeUndefined();
    expect(await exists(join(dir, 'store', m.uuid))).toBe(false);
    await expectError(registry.delete(m.uuid), NotFoundError, `model ${m.uuid} not found`);
  });

  it('check runs checkRecord on the live model', async () => {
    const m = await registry.create({ name: 'm' });
    await attr(m.uuid, 'temp', { rule: { min: -40, max: 125 } });
    expect(registry.check(m.uuid, { temp: 1 }, 'save')).toEqual({ ok: false, error: `model ${m.name} (${m.uuid}) is not published` });
    await registry.publish(m.uuid);
    expect(registry.check(m.uuid, { temp: 1 }, 'save')).toEqual({ ok: true, record: { temp: 1 } });
    expect(registry.check(m.uuid, { temp: 200 }, 'save')).toEqual({ ok: false, error: `model m (${m.uuid}): attribute 'temp' must be in -40..125, got 200` });
    expect(registry.check('SCHEMA22222222', {}, 'save')).toEqual({ ok: false, error: 'unknown model SCHEMA22222222' });
  });

  it('onChange fires after each successful change only, and can be removed', async () => {
    let calls = 0;
    const off = registry.onChange(() => calls++);
    registry.onChange(() => {
      throw new Error('a broken listener');
    });
    const m = await registry.create({ name: 'm' });
    await attr(m.uuid, 'a');
    await registry.create({ name: '' }).catch(() => undefined);
    expect(calls).toBe(2);
    off();
    await registry.create({ name: 'n' });
    expect(calls).toBe(2);
  });
});

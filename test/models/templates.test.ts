import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError, NotFoundError } from '../../src/errors.js';
import { ATTRIBUTE_TYPES, ModelRegistry } from '../../src/models/index.js';
import type { Store } from '../../src/store/index.js';
import { openStore } from './helpers.js';

let dir: string;
let registry: ModelRegistry;
let store: Store;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edc-templates-'));
  store = await openStore(join(dir, 'store'));
  registry = await ModelRegistry.open({ dataDir: dir, store });
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

/** The attribute names RHILEX's genTemplate inserts (reference section 1.9). */
const RHILEX_NAMES: Record<string, string[]> = {
  TEMP_HUMIDITY: ['device_id', 'temperature', 'humidity'],
  SWITCH_STATUS: ['device_id', 'status'],
  WATER_QUALITY: ['device_id', 'ph', 'turbidity', 'dissolved_oxygen', 'conductivity', 'temperature'],
  AIR_QUALITY: ['device_id', 'pm25', 'pm10', 'co2', 'tvoc', 'temperature', 'humidity'],
  MOTION_SENSOR: ['device_id', 'detected', 'intensity', 'battery'],
  SMART_METER: ['device_id', 'energy_consumption', 'current', 'voltage', 'power_factor'],
  SOIL_MOISTURE: ['device_id', 'moisture', 'temperature', 'ec'],
  GPS_TRACKER: ['device_id', 'latitude', 'longitude', 'altitude', 'speed', 'battery'],
  SMOKE_DETECTOR: ['device_id', 'smoke_detected', 'co_level', 'battery', 'last_tested'],
  SMART_LOCK: ['device_id', 'lock_status', 'access_method', 'user_id', 'battery'],
  SIX_AXIS_ACCELEROMETER: [
    'device_id', 'accel_x', 'accel_y', 'accel_z', 'gyro_x', 'gyro_y', 'gyro_z', 'temperature', 'battery',
  ],
};

describe('templates', () => {
  it('lists the eleven RHILEX template ids in RHILEX order', () => {
    expect(registry.templates().map((t) => t.value)).toEqual(Object.keys(RHILEX_NAMES));
    for (const t of registry.templates()) expect(t.label).not.toBe('');
  });

  it.each(Object.entries(RHILEX_NAMES))('%s: RHILEX names, valid types, defaults inside the bounds', (id, names) => {
    const fields = registry.templateFields(id);
    expect(fields.map((f) => f.name)).toEqual(names);
    for (const f of fields) {
      expect(ATTRIBUTE_TYPES).toContain(f.type);
      if ((f.type === 'INTEGER' || f.type === 'FLOAT') && f.rule.max > f.rule.min) {
        expect(f.rule.defaultValue).toBeGreaterThanOrEqual(f.rule.min);
        expect(f.rule.defaultValue).toBeLessThanOrEqual(f.rule.max);
      }
    }
    expect(fields[0]).toMatchObject({ name: 'device_id', type: 'STRING', rule: { max: 64 } });
  });

  it('every template field is a valid attribute body that the API stores unchanged', async () => {
    const m = await registry.create({ name: 'm' });
    for (const id of Object.keys(RHILEX_NAMES)) {
      for (const field of registry.templateFields(id)) {
        const created = await registry.createAttribute({ ...field, schemaId: m.uuid, name: `${id}_${field.name}` });
        expect({ ...created, name: field.name }).toMatchObject(field);
      }
    }
  });

  it('applying inserts exactly the preview, and the result accepts real-world values', async () => {
    const m = await registry.create({ name: 'm' });
    const added = await registry.applyTemplate(m.uuid, 'TEMP_HUMIDITY');
    expect(added.map(({ uuid: _u, schemaId: _s, ...rest }) => rest)).toEqual(registry.templateFields('TEMP_HUMIDITY'));
    for (const a of added) {
      expect(a.uuid).toMatch(/^PROPER[2-9A-Z]{8}$/);
      expect(a.schemaId).toBe(m.uuid);
    }
    expect(registry.listAttributes(m.uuid)).toEqual(added);
    await registry.publish(m.uuid);
    expect(registry.check(m.uuid, { device_id: 'dev-1', temperature: -12.345, humidity: 55 }, 'save')).toEqual({
      ok: true, record: { device_id: 'dev-1', temperature: -12.35, humidity: 55 },
    });
    expect(registry.check(m.uuid, { humidity: 101 }, 'save')).toEqual({
      ok: false, error: `model ${m.name} (${m.uuid}): attribute 'humidity' must be in 0..100, got 101`,
    });
  });

  it('maps RHILEX types outside the five: INT, BOOLEAN, TIMESTAMP, VARCHAR(20)', () => {
    const byName = (id: string, name: string) => registry.templateFields(id).find((f) => f.name === name);
    expect(byName('AIR_QUALITY', 'co2')?.type).toBe('INTEGER');
    expect(byName('SMOKE_DETECTOR', 'smoke_detected')?.type).toBe('BOOL');
    expect(byName('SMOKE_DETECTOR', 'last_tested')).toMatchObject({ type: 'INTEGER', unit: 'ms', rule: { min: 0, max: 0 } });
    expect(byName('SMART_LOCK', 'lock_status')).toMatchObject({ type: 'BOOL', rw: 'RW' });
    expect(byName('SMART_LOCK', 'access_method')).toMatchObject({ type: 'STRING', rw: 'RW', rule: { max: 20 } });
    expect(byName('GPS_TRACKER', 'latitude')?.rule).toMatchObject({ min: -90, max: 90, round: 6 });
  });

  it('a clash (case-insensitive) inserts nothing and names the clashing names', async () => {
    const m = await registry.create({ name: 'm' });
    await registry.createAttribute({ schemaId: m.uuid, name: 'Temperature', type: 'FLOAT' });
    await registry.createAttribute({ schemaId: m.uuid, name: 'DEVICE_ID', type: 'STRING' });
    const error = await registry.applyTemplate(m.uuid, 'TEMP_HUMIDITY').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toBe(
      `template TEMP_HUMIDITY clashes with existing attributes of model ${m.name} (${m.uuid}): "device_id", "temperature" (names are case-insensitive); nothing was added`,
    );
    expect(registry.listAttributes(m.uuid)).toHaveLength(2);
    const twice = await registry.create({ name: 'twice' });
    await registry.applyTemplate(twice.uuid, 'SWITCH_STATUS');
    await expect(registry.applyTemplate(twice.uuid, 'SMART_LOCK')).rejects.toThrow(/"device_id"/);
  });

  it('unknown template or model', async () => {
    expect(() => registry.templateFields('NOPE')).toThrow(
      'templateId must be one of TEMP_HUMIDITY, SWITCH_STATUS, WATER_QUALITY, AIR_QUALITY, MOTION_SENSOR, SMART_METER, SOIL_MOISTURE, GPS_TRACKER, SMOKE_DETECTOR, SMART_LOCK or SIX_AXIS_ACCELEROMETER, got "NOPE"',
    );
    const m = await registry.create({ name: 'm' });
    await expect(registry.applyTemplate(m.uuid, 'NOPE')).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(registry.applyTemplate('SCHEMA22222222', 'GPS_TRACKER')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('the preview is a fresh copy each time', () => {
    const first = registry.templateFields('GPS_TRACKER');
    first[0].name = 'changed';
    expect(registry.templateFields('GPS_TRACKER')[0].name).toBe('device_id');
  });
});

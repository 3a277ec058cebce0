/**
 * RHILEX's eleven quick-select templates, with the attribute names RHILEX's genTemplate inserts, but
 * only valid types and bounds that fit each quantity (RHILEX gives every field min 0, max 1000,
 * which refuses negative temperatures). Type changes from RHILEX: INT -> INTEGER, BOOLEAN -> BOOL,
 * VARCHAR(20) -> STRING of at most 20 bytes, TIMESTAMP -> INTEGER milliseconds since the epoch (UTC).
 * min/max 0/0 means no bound where a quantity has no natural one. docs/models.md has the table.
 */
import type { AttributeFields } from './attribute-input.js';
import type { AttributeRw } from './types.js';

interface Template {
  value: string;
  label: string;
  fields: readonly AttributeFields[];
}

interface FieldOptions {
  unit?: string;
  min?: number;
  max?: number;
  round?: number;
  rw?: AttributeRw;
}

function float(name: string, label: string, options: FieldOptions): AttributeFields {
  const { unit = '', min = 0, max = 0, round = 2, rw = 'R' } = options;
  return {
    label, name, description: '', type: 'FLOAT', rw, unit,
    rule: { defaultValue: 0, max, min, trueLabel: '', falseLabel: '', round },
  };
}

function integer(name: string, label: string, options: FieldOptions): AttributeFields {
  const { unit = '', min = 0, max = 0, rw = 'R' } = options;
  return {
    label, name, description: '', type: 'INTEGER', rw, unit,
    rule: { defaultValue: 0, max, min, trueLabel: '', falseLabel: '', round: 0 },
  };
}

function bool(name: string, label: string, labels: [string, string], rw: AttributeRw = 'R'): AttributeFields {
  return {
    label, name, description: '', type: 'BOOL', rw, unit: '',
    rule: { defaultValue: false, max: 0, min: 0, trueLabel: labels[0], falseLabel: labels[1], round: 0 },
  };
}

function string(name: string, label: string, maxBytes: number, rw: AttributeRw = 'R'): AttributeFields {
  return {
    label, name, description: '', type: 'STRING', rw, unit: '',
    rule: { defaultValue: '', max: maxBytes, min: 0, trueLabel: '', falseLabel: '', round: 0 },
  };
}

const deviceId = string('device_id', 'Device ID', 64);
const batteryFloat = float('battery', 'Battery', { unit: '%', min: 0, max: 100, round: 1 });

const TEMPLATES: readonly Template[] = [
  {
    value: 'TEMP_HUMIDITY', label: 'Temperature and humidity sensor',
    fields: [
      deviceId,
      float('temperature', 'Temperature', { unit: '℃', min: -40, max: 125 }),
      float('humidity', 'Relative humidity', { unit: '%', min: 0, max: 100 }),
    ],
  },
  {
    value: 'SWITCH_STATUS', label: 'Switch status',
    fields: [deviceId, bool('status', 'Switch status', ['On', 'Off'], 'RW')],
  },
  {
    value: 'WATER_QUALITY', label: 'Water quality sensor',
    fields: [
      deviceId,
      float('ph', 'pH', { unit: 'pH', min: 0, max: 14 }),
      float('turbidity', 'Turbidity', { unit: 'NTU', min: 0, max: 4000 }),
      float('dissolved_oxygen', 'Dissolved oxygen', { unit: 'mg/L', min: 0, max: 50 }),
      float('conductivity', 'Conductivity', { unit: 'μS/cm', min: 0, max: 200000 }),
      float('temperature', 'Water temperature', { unit: '℃', min: -20, max: 100 }),
    ],
  },
  {
    value: 'AIR_QUALITY', label: 'Air quality sensor',
    fields: [
      deviceId,
      float('pm25', 'PM2.5', { unit: 'μg/m³', min: 0, max: 1000 }),
      float('pm10', 'PM10', { unit: 'μg/m³', min: 0, max: 2000 }),
      integer('co2', 'CO₂', { unit: 'ppm', min: 0, max: 50000 }),
      float('tvoc', 'TVOC', { unit: 'ppb', min: 0, max: 60000 }),
      float('temperature', 'Temperature', { unit: '℃', min: -40, max: 125 }),
      float('humidity', 'Relative humidity', { unit: '%', min: 0, max: 100 }),
    ],
  },
  {
    value: 'MOTION_SENSOR', label: 'Motion sensor',
    fields: [
      deviceId,
      bool('detected', 'Motion detected', ['Motion', 'No motion']),
      integer('intensity', 'Intensity', {}),
      integer('battery', 'Battery', { unit: '%', min: 0, max: 100 }),
    ],
  },
  {
    value: 'SMART_METER', label: 'Smart meter',
    fields: [
      deviceId,
      float('energy_consumption', 'Energy consumption', { unit: 'kWh' }),
      float('current', 'Current', { unit: 'A' }),
      float('voltage', 'Voltage', { unit: 'V', min: 0, max: 1000 }),
      float('power_factor', 'Power factor', { min: -1, max: 1, round: 3 }),
    ],
  },
  {
    value: 'SOIL_MOISTURE', label: 'Soil moisture sensor',
    fields: [
      deviceId,
      float('moisture', 'Soil moisture', { unit: '%', min: 0, max: 100 }),
      float('temperature', 'Soil temperature', { unit: '℃', min: -40, max: 80 }),
      float('ec', 'Electrical conductivity', { unit: 'mS/cm', min: 0, max: 20 }),
    ],
  },
  {
    value: 'GPS_TRACKER', label: 'GPS tracker',
    fields: [
      deviceId,
      float('latitude', 'Latitude', { unit: '°', min: -90, max: 90, round: 6 }),
      float('longitude', 'Longitude', { unit: '°', min: -180, max: 180, round: 6 }),
      float('altitude', 'Altitude', { unit: 'm', min: -500, max: 20000, round: 1 }),
      float('speed', 'Speed', { unit: 'km/h', min: 0, max: 1500, round: 1 }),
      batteryFloat,
    ],
  },
  {
    value: 'SMOKE_DETECTOR', label: 'Smoke detector',
    fields: [
      deviceId,
      bool('smoke_detected', 'Smoke detected', ['Smoke', 'Clear']),
      float('co_level', 'CO level', { unit: 'ppm', min: 0, max: 10000 }),
      batteryFloat,
      integer('last_tested', 'Last tested', { unit: 'ms' }),
    ],
  },
  {
    value: 'SMART_LOCK', label: 'Smart lock',
    fields: [
      deviceId,
      bool('lock_status', 'Lock status', ['Locked', 'Unlocked'], 'RW'),
      string('access_method', 'Access method', 20, 'RW'),
      string('user_id', 'User ID', 64, 'RW'),
      batteryFloat,
    ],
  },
  {
    value: 'SIX_AXIS_ACCELEROMETER', label: 'Six-axis accelerometer',
    fields: [
      deviceId,
      ...['x', 'y', 'z'].map((axis) =>
        float(`accel_${axis}`, `Acceleration ${axis.toUpperCase()}`, { unit: 'g', min: -16, max: 16, round: 4 })),
      ...['x', 'y', 'z'].map((axis) =>
        float(`gyro_${axis}`, `Angular rate ${axis.toUpperCase()}`, { unit: 'deg/s', min: -2000, max: 2000 })),
      float('temperature', 'Temperature', { unit: '℃', min: -40, max: 85 }),
      batteryFloat,
    ],
  },
];

export function templateList(): Array<{ label: string; value: string }> {
  return TEMPLATES.map(({ label, value }) => ({ label, value }));
}

/** The fields a template inserts, as fresh objects; undefined for an unknown template id. */
export function templateFieldsOf(templateId: string): AttributeFields[] | undefined {
  return TEMPLATES.find((t) => t.value === templateId)?.fields.map((f) => structuredClone(f));
}

export const TEMPLATE_IDS: readonly string[] = TEMPLATES.map((t) => t.value);

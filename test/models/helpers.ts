import { Store } from '../../src/store/index.js';
import type { Attribute, AttributeType, DataModel } from '../../src/models/types.js';
import { zeroValue } from '../../src/models/index.js';

/** A published model built directly, for checkRecord. */
export function model(attributes: Array<Partial<Attribute> & { name: string; type: AttributeType }>): DataModel {
  return {
    uuid: 'SCHEMATEST2345',
    name: 'test',
    description: '',
    published: true,
    createdAtMs: 0,
    attributes: attributes.map((a, i) => ({
      uuid: `PROPERTEST234${i}`,
      schemaId: 'SCHEMATEST2345',
      label: '',
      description: '',
      rw: 'R',
      unit: '',
      ...a,
      rule: { defaultValue: zeroValue(a.type), min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0, ...a.rule },
    })),
  };
}

/** The real store, small segments, no fsync: what the registry runs on in these tests. */
export function openStore(rootDir: string): Promise<Store> {
  return Store.open({
    rootDir,
    durability: 'none',
    syncIntervalMs: 1000,
    segmentBytesMax: 1 << 20,
    segmentAgeMsMax: 86_400_000,
    retention: { maxRecords: 0, maxBytes: 0, maxAgeMs: 0 },
  });
}

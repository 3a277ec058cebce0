/**
 * The plain in-memory model a store log is checked against: every record's versions (a save, then the
 * update-lasts while it was the newest), and what durable() acknowledged. A read is checked against the
 * model as it was when the read was called; only the newest record may show a later version (an
 * update-last coalesced into the unflushed chunk while the read was in flight).
 */
import { expect } from 'vitest';
import type { RecordView } from '../../../src/store/base/types.js';

export const FIELDS = ['temp', 'hum', 'status', 'dev', 'ok', 'seq'] as const;
export type Values = Record<(typeof FIELDS)[number], unknown>;

interface Entry {
  versions: Values[];
  /** Highest version index acknowledged by durable(); -1 none. */
  acked: number;
}

/** What a read may return, fixed when it was called. */
export interface ReadSnapshot {
  entries: ReadonlyArray<Entry | undefined>;
  firstId: number;
  lastId: number;
  /** Versions of the newest record when the read was called. */
  lastVersions: number;
}

export class ModelOfLog {
  /**
   * Index id - 1. Replaced, never emptied in place, so snapshots held by reads in flight stay as they
   * were. An undefined entry is an id that was handed out and lost in a crash before it was durable: the
   * store reports it lost and never hands it out again.
   */
  private entries: Array<Entry | undefined> = [];
  /** Retention only moves the first id forward. */
  private firstIdSeen = 1;

  constructor(readonly name: string) {}

  /** Id of the newest record; 0 when there is none. */
  get lastId(): number {
    for (let id = this.entries.length; id > 0; id--) if (this.entries[id - 1] !== undefined) return id;
    return 0;
  }

  values(seq: number): Values {
    return { temp: seq / 2, hum: seq % 100, status: this.name, dev: `d${seq}`, ok: seq % 2 === 0, seq };
  }

  saved(id: number, values: Values): void {
    expect(id, `${this.name}: save returns the next id`).toBe(this.entries.length + 1);
    this.entries = [...this.entries, { versions: [values], acked: -1 }];
  }

  updated(id: number, values: Values): void {
    // The newest id lost its record in a crash: update-last then stores a new record.
    if (this.entries.length > 0 && this.entries[this.entries.length - 1] === undefined) return this.saved(id, values);
    expect(id, `${this.name}: updateLast returns the newest id`).toBe(this.entries.length);
    (this.entries[id - 1] as Entry).versions.push(values);
  }

  newestValues(): Values | undefined {
    const id = this.lastId;
    return id === 0 ? undefined : this.entries[id - 1]?.versions.at(-1);
  }

  cleared(): void {
    this.entries = [];
    this.firstIdSeen = 1;
  }

  /** durable() was called now: returns what its resolution acknowledges. */
  ackPoint(): () => void {
    const entries = this.entries;
    const id = entries.length;
    const version = id > 0 ? (entries[id - 1]?.versions.length ?? 0) - 1 : -1;
    return () => {
      for (let i = 0; i < id; i++) {
        const e = entries[i];
        if (e !== undefined) e.acked = i === id - 1 ? Math.max(e.acked, version) : e.versions.length - 1;
      }
    };
  }

  snapshot(firstId: number, lastId: number): ReadSnapshot {
    expect(lastId, `${this.name}: the log's last id`).toBe(this.lastId);
    expect(firstId, `${this.name}: the first id never moves back`).toBeGreaterThanOrEqual(this.firstIdSeen);
    expect(firstId).toBeLessThanOrEqual(lastId + 1);
    this.firstIdSeen = firstId;
    const last = this.entries[lastId - 1];
    return { entries: this.entries, firstId, lastId, lastVersions: last ? last.versions.length : 0 };
  }

  /**
   * After a crash: the log must hold a prefix of what was appended that keeps everything acknowledged,
   * each record at a version no older than the acknowledged one. Ids this open reports lost (`lost`:
   * what the store's findings newly name) must be unacknowledged ids past that prefix; they stay holes.
   * The model becomes that prefix plus the holes.
   */
  recovered(firstId: number, records: RecordView[], lost: ReadonlyArray<{ fromId: number; toId: number }> = []): void {
    // With no record left, the first id may already lie past the ids lost at the tail (a fresh segment).
    const lastId = records.length > 0 ? (records[records.length - 1].id as number) : Math.min(firstId - 1, ...lost.map((r) => r.fromId - 1));
    const ackedThrough = this.entries.reduce((n, e, i) => (e !== undefined && e.acked >= 0 ? i + 1 : n), 0);
    expect(lastId, `${this.name}: acknowledged records survive a crash`).toBeGreaterThanOrEqual(ackedThrough);
    expect(lastId).toBeLessThanOrEqual(this.entries.length);
    let handedOut = lastId;
    // Holes an earlier crash left after the surviving records stay handed out; that open reported them, this one need not.
    for (let id = lastId + 1; id <= this.entries.length; id++) if (this.entries[id - 1] === undefined) handedOut = id;
    const seen = `lost ${JSON.stringify(lost)}, newest records ${JSON.stringify(records.slice(-3).map((r) => r.id))}`;
    for (const r of lost) {
      expect(r.fromId, `${this.name}: only ids past the surviving records are lost (${seen})`).toBeGreaterThan(lastId);
      expect(r.toId, `${this.name}: only ids that were handed out are lost`).toBeLessThanOrEqual(this.entries.length);
      handedOut = Math.max(handedOut, r.toId);
    }
    const live = (id: number) => this.entries[id - 1] !== undefined;
    expect(records.map((r) => r.id)).toEqual(range(firstId, lastId).filter(live));
    const kept: Array<Entry | undefined> = this.entries.slice(0, lastId).map((e) => e && { versions: [...e.versions], acked: e.acked });
    for (const r of records) {
      const e = kept[(r.id as number) - 1] as Entry;
      const v = versionOf(e, r, `${this.name} id ${r.id} after a crash`);
      expect(v, `${this.name} id ${r.id}: an acknowledged update-last survives`).toBeGreaterThanOrEqual(e.acked);
      e.versions.length = v + 1;
    }
    while (kept.length < handedOut) kept.push(undefined);
    this.entries = kept;
    this.firstIdSeen = firstId;
  }

  /** Ids firstId..lastId that hold a record in the snapshot. */
  static liveIds(snap: ReadSnapshot, from: number, to: number): number[] {
    return range(from, to).filter((id) => snap.entries[id - 1] !== undefined);
  }
}

/** Checks one record a read returned; `first` is the snapshot's own first-id for the page formula. */
export function checkRecord(snap: ReadSnapshot, r: RecordView, what: string): void {
  const id = r.id as number;
  expect(id, `${what}: id inside the snapshot`).toBeGreaterThanOrEqual(snap.firstId);
  expect(id, `${what}: id inside the snapshot`).toBeLessThanOrEqual(snap.lastId);
  const e = snap.entries[id - 1];
  if (e === undefined) expect.fail(`${what}: id ${id} was lost in a crash but a read returned it`);
  const v = versionOf(e, r, what);
  const oldest = id === snap.lastId ? snap.lastVersions - 1 : e.versions.length - 1;
  expect(v, `${what}: id ${id} is not older than when the read was called`).toBeGreaterThanOrEqual(oldest);
}

function versionOf(e: { versions: Values[] }, r: RecordView, what: string): number {
  const v = e.versions.findIndex((values) => FIELDS.every((f) => r[f] === values[f]));
  if (v < 0) expect.fail(`${what}: id ${r.id} holds values that were never written to it: ${JSON.stringify(r)}`);
  return v;
}

/**
 * Ids a page must hold by the contract, for live ids firstId..lastId: pages count records, not ids, so the
 * ids a crash lost (a gap between segments once writes go on) take no place on a page.
 */
export function pageIds(snap: ReadSnapshot, current: number, size: number, order: 'asc' | 'desc'): number[] {
  const live = ModelOfLog.liveIds(snap, snap.firstId, snap.lastId);
  if (order === 'desc') live.reverse();
  return live.slice((current - 1) * size, current * size);
}

export function range(a: number, b: number): number[] {
  return Array.from({ length: Math.max(0, b - a + 1) }, (_, i) => a + i);
}

/**
 * SummaryFolder (summary-fold.ts) against the fold it replaced, record by record through decodeValues:
 * the same summary for any frames the reads keep, whatever the payloads hold (every msgpack scalar tag,
 * ASCII and other strings, booleans, nil, arrays shorter or longer than the fields), with update-last
 * frames, reads split into parts, and a summary folded over several calls; and the checksum of each block
 * a read holds whole, taken from those bytes.
 */
import fc from 'fast-check';
import { unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { FRAME_HEADER_BYTES, FRAME_SAVE, FRAME_SUPERSEDE, checkFrame, frameId, wholeValidFrames, type FrameType } from '../../src/store/format/frame.js';
import { decodeValues, visitFrames, walkFrames, type StoredRecord } from '../../src/store/read/reader.js';
import { SegmentSummary } from '../../src/store/aggregate/segment-summary.js';
import { SummaryFolder } from '../../src/store/aggregate/summary-fold.js';
import { blockChecksum } from '../../src/store/aggregate/block-checksum.js';
import { type FrameSpec, frames, packr, scalarArray } from './frame-arbitraries.js';

/** A value array as the store would hold it: msgpackr decodes it to an array. */
const valueArray: fc.Arbitrary<Uint8Array> = fc
  .oneof(
    scalarArray,
    fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('run', 'idle', ''), fc.double(), fc.integer(), fc.boolean(), fc.constant(null)), { maxLength: 10 }).map((a) => packr.pack(a) as Uint8Array),
    fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.anything({ maxDepth: 1 })), { maxLength: 6 }).map((a) => packr.pack(a) as Uint8Array),
  )
  .filter((p) => {
    try {
      return Array.isArray(unpack(p));
    } catch {
      return false;
    }
  });

/** Frames of ids from `first` on: a SAVE the next id (or a later one: lost), a SUPERSEDE the same id again. */
const storedFrames: fc.Arbitrary<FrameSpec[]> = fc
  .tuple(
    fc.integer({ min: 1, max: 1_000_000 }),
    fc.array(fc.tuple(fc.constantFrom<FrameType>(FRAME_SAVE, FRAME_SAVE, FRAME_SAVE, FRAME_SUPERSEDE), fc.oneof({ weight: 60, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.constantFrom(3, 70) }), fc.integer({ min: -5, max: 5 }), valueArray), { minLength: 1, maxLength: 300, size: 'max' }),
  )
  .map(([first, rows]) => {
    let id = first - 1;
    let ts = 1_767_225_600_000;
    return rows.map(([type, step, dt, payload], i) => {
      id = type === FRAME_SUPERSEDE && i > 0 ? id : id + step;
      ts += dt * 100;
      return { type: i === 0 ? FRAME_SAVE : type, id, ts, payload };
    });
  });

/** Cuts the frames into reads at id boundaries (a read never splits the frames of one id), at the given picks. */
function parts(specs: readonly FrameSpec[], cuts: readonly number[]): FrameSpec[][] {
  const at = new Set(cuts.map((c) => c % specs.length).filter((c) => c > 0 && specs[c].id !== specs[c - 1].id));
  const out: FrameSpec[][] = [[]];
  specs.forEach((s, i) => {
    if (at.has(i)) out.push([]);
    out[out.length - 1].push(s);
  });
  return out;
}

/** What the summary answers: per block its time range, count and every field's statistics. */
function answers(s: SegmentSummary) {
  const rows = [];
  for (let k = 0; k < s.blocks; k++) {
    rows.push({ minTs: s.minTs[k], maxTs: s.maxTs[k], records: s.records[k], fields: Array.from({ length: s.table.fieldCount }, (_, f) => s.table.get(k, f)) });
  }
  return { blocks: s.blocks, coveredTo: s.coveredTo, tsMin: s.tsMin, bools: [...s.table.bools], rows };
}

function checksums(s: SegmentSummary): Array<[number, number]> {
  return Array.from({ length: s.blocks }, (_, k) => (s.blockBytes[k] > 0 ? [s.blockCrc[k], s.blockBytes[k]] : [0, 0]));
}

/**
 * The checksum of each block read whole in one part (from its first id to its last; ids between may be
 * missing, as frames lost leave them) and only of such blocks: the CRC-32 of its frames' bytes, the
 * update-last frames among them.
 */
function expectedChecksums(reads: readonly FrameSpec[][], s: SegmentSummary): Array<[number, number]> {
  const out = checksums(s).map((): [number, number] => [0, 0]);
  for (const read of reads) {
    for (let k = 0; k < s.blocks; k++) {
      const [a, b] = [s.blockFirstId(k), s.blockFirstId(k + 1) - 1];
      const mine = read.filter((f) => f.id >= a && f.id <= b);
      if (mine.length === 0 || mine[0].id !== a || mine[mine.length - 1].id !== b) continue;
      const bytes = frames(mine);
      out[k] = [blockChecksum(bytes), bytes.length];
    }
  }
  return out;
}

const noLoss = (from: number, to: number): void => {
  throw new Error(`frames lost: ${from}..${to}`);
};

describe('SummaryFolder', () => {
  it('builds the summary that folding every record decoded builds, with the checksum of each block read whole', () => {
    let withChecksums = 0;
    fc.assert(
      fc.property(storedFrames, fc.integer({ min: 1, max: 8 }), fc.array(fc.nat(), { maxLength: 6 }), fc.array(fc.boolean(), { maxLength: 8 }), (specs, fieldCount, cuts, newFolders) => {
        const firstId = specs[0].id;
        const byDecode = new SegmentSummary(firstId, fieldCount);
        const byBytes = new SegmentSummary(firstId, fieldCount);
        let folder = new SummaryFolder(byBytes);
        parts(specs, cuts).forEach((part, p) => {
          const buf = frames(part);
          const lo = part[0].id;
          const hi = part[part.length - 1].id;
          const records: StoredRecord[] = [];
          walkFrames(buf, lo, hi, records, noLoss);
          for (const r of records) byDecode.fold(r.id, r.ts, decodeValues(r.payload));
          byDecode.coveredTo = hi;
          // A later aggregation folds the next records with a folder of its own (summaries.ts: one per call).
          if (newFolders[p]) folder = new SummaryFolder(byBytes);
          visitFrames(buf, lo, hi, folder.keep, noLoss);
          folder.finish();
          byBytes.coveredTo = hi;
        });
        expect(answers(byBytes)).toEqual(answers(byDecode));
        expect(checksums(byBytes)).toEqual(expectedChecksums(parts(specs, cuts), byBytes));
        if (checksums(byBytes).some(([, bytes]) => bytes > 0)) withChecksums++;
      }),
      { numRuns: 400 },
    );
    expect(withChecksums).toBeGreaterThan(40);
  });

  it('takes a checksum only of bytes whose frames all passed their CRC, when a bit of a read is flipped', () => {
    fc.assert(
      fc.property(storedFrames, fc.integer({ min: 1, max: 8 }), fc.array(fc.nat(), { maxLength: 6 }), fc.nat(), fc.integer({ min: 0, max: 7 }), (specs, fieldCount, cuts, at, bit) => {
        const firstId = specs[0].id;
        const byDecode = new SegmentSummary(firstId, fieldCount);
        const byBytes = new SegmentSummary(firstId, fieldCount);
        const reads = parts(specs, cuts).map((part) => ({ buf: frames(part), lo: part[0].id, hi: part[part.length - 1].id }));
        const hit = reads[at % reads.length].buf;
        hit[(at >> 3) % hit.length] ^= 1 << bit;
        const lostByDecode: number[][] = [];
        const lostByBytes: number[][] = [];
        for (const { buf, lo, hi } of reads) {
          const records: StoredRecord[] = [];
          walkFrames(buf, lo, hi, records, (a, b) => lostByDecode.push([a, b]));
          for (const r of records) byDecode.fold(r.id, r.ts, decodeValues(r.payload));
          const folder = new SummaryFolder(byBytes);
          visitFrames(buf, lo, hi, folder.keep, (a, b) => lostByBytes.push([a, b]));
          folder.finish();
        }
        expect(answers(byBytes)).toEqual(answers(byDecode));
        expect(lostByBytes).toEqual(lostByDecode);
        for (let k = 0; k < byBytes.blocks; k++) {
          if (byBytes.blockBytes[k] === 0) continue;
          // Some offset of a read where a frame of the block's first id starts the checksummed bytes, all valid frames.
          const found = reads.some(({ buf }) =>
            buf.some((_, off) => {
              const bytes = buf.subarray(off, off + byBytes.blockBytes[k]);
              return checkFrame(buf, off, buf.length) > 0 && frameId(buf, off) === byBytes.blockFirstId(k) && bytes.length === byBytes.blockBytes[k] && wholeValidFrames(bytes) && blockChecksum(bytes) === byBytes.blockCrc[k];
            }),
          );
          expect(found, `block ${k}`).toBe(true);
        }
      }),
      { numRuns: 20, verbose: 2 },
    );
  });

  it('refuses an empty payload as the full decoder does, whatever byte follows it', () => {
    // The next frame starts with its length word, whose low byte is 18 + its payload's bytes: 126 bytes make it
    // 0x90, which read as the empty payload's header would be an empty array, a record of nulls.
    const next = Uint8Array.from([0x91, 0xd9, 123, ...Buffer.from('a'.repeat(123))]);
    const buf = frames([
      { type: FRAME_SAVE, id: 1, ts: 1000, payload: new Uint8Array(0) },
      { type: FRAME_SAVE, id: 2, ts: 1001, payload: next },
    ]);
    expect(buf[FRAME_HEADER_BYTES]).toBe(0x90);
    const records: StoredRecord[] = [];
    walkFrames(buf, 1, 2, records, noLoss);
    expect(() => new SegmentSummary(1, 1).fold(1, 1000, decodeValues(records[0].payload))).toThrow('Unexpected end of MessagePack data');
    const folder = new SummaryFolder(new SegmentSummary(1, 1));
    expect(() => {
      visitFrames(buf, 1, 2, folder.keep, noLoss);
      folder.finish();
    }).toThrow('Unexpected end of MessagePack data');
  });

  it('keeps the last string of a block even when later records of the block hold none, or a number', () => {
    const fieldCount = 2;
    const values: unknown[][] = [['a', 1], ['b', null], [null, 2], ['c', 'x'], [7, 'y'], ['é', null], ['d', 3]];
    const specs = values.map((v, i) => ({ type: FRAME_SAVE as FrameType, id: i + 1, ts: 1000 + i, payload: packr.pack(v) as Uint8Array }));
    const s = new SegmentSummary(1, fieldCount);
    const folder = new SummaryFolder(s);
    const buf = frames(specs);
    visitFrames(buf, 1, 3, folder.keep, noLoss);
    folder.finish();
    expect(s.table.get(0, 0)).toMatchObject({ n: 2, first: 'a', last: 'b' });
    visitFrames(buf, 4, 7, folder.keep, noLoss);
    folder.finish();
    expect(s.table.get(0, 0)).toMatchObject({ n: 6, first: 'a', last: 'd' });
    expect(s.table.get(0, 1)).toMatchObject({ n: 5, first: 1, last: 3 });
    expect(s.records[0]).toBe(7);
  });
});

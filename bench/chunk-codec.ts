/**
 * The chunk codec of compressed sealed segments (issue 11) on 64-record chunks framed as the store writes
 * them (msgpack value arrays, ids in a row, one record every 100 ms): stored bytes a record, against the
 * raw frames and plain deflate of the chunk, and CPU microseconds to encode and decode one chunk (the
 * fastest and the median of several runs; the machine is shared, the fastest is the least disturbed).
 * Usage: tsc -p tsconfig.bench.json && node dist-bench/bench/chunk-codec.js [--runs 15]
 */
import { deflateRawSync } from 'node:zlib';
import { parseArgs } from 'node:util';
import { Packr } from 'msgpackr';
import { decodeChunk, encodeChunk } from '../src/store/format/chunk-codec.js';
import { FRAME_HEADER_BYTES, FRAME_SAVE, sealFrame } from '../src/store/format/frame.js';
import { FIELDS, sensorRecord } from './records.js';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
const RUNS = Number(args.runs);
const CHUNKS = 200;
const RECORDS_PER_CHUNK = 64;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const packr = new Packr({ useRecords: false });

function chunkOf(first: number, values: (i: number) => unknown[]): Buffer {
  const payloads = Array.from({ length: RECORDS_PER_CHUNK }, (_, k) => packr.pack(values(first + k)));
  const out = Buffer.alloc(payloads.reduce((n, p) => n + FRAME_HEADER_BYTES + p.length, 0));
  let off = 0;
  payloads.forEach((p, k) => {
    p.copy(out, off + FRAME_HEADER_BYTES);
    sealFrame(out, off, FRAME_SAVE, first + k + 1, T0 + 100 * (first + k), p.length);
    off += FRAME_HEADER_BYTES + p.length;
  });
  return out;
}

/** Sensor readings as a gateway sends them: random walks rounded to the sensor's resolution, a message counter. */
function walkRecords(): (i: number) => unknown[] {
  let seed = 1;
  const random = (): number => (seed = (seed * 16807) % 2147483647) / 2147483647;
  let temperature = 21.5;
  let humidity = 45;
  let pressure = 1013.2;
  return (i) => {
    temperature = Math.round((temperature + (random() - 0.5) * 0.1) * 100) / 100;
    humidity = Math.round((humidity + (random() - 0.5) * 0.4) * 10) / 10;
    pressure = Math.round((pressure + (random() - 0.5) * 0.2) * 100) / 100;
    return [`gw-dev-${i % 64}`, temperature, humidity, pressure, 100_000 + i, i % 97 === 0 ? 'alarm' : 'ok'];
  };
}

/** Fastest and median CPU microseconds of one call of f over the chunks, over RUNS runs. */
function cpuUs(count: number, f: (i: number) => void): { min: number; median: number } {
  const runs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const start = process.cpuUsage();
    for (let i = 0; i < count; i++) f(i);
    const used = process.cpuUsage(start);
    runs.push((used.user + used.system) / count);
  }
  runs.sort((a, b) => a - b);
  return { min: runs[0], median: runs[runs.length >> 1] };
}

const sets: [string, (i: number) => unknown[]][] = [
  ['bench records (bench/records.ts)', (i) => FIELDS.map((f) => sensorRecord(i)[f])],
  ['random-walk readings + counter', walkRecords()],
];
console.log('| records | raw B/rec | deflate B/rec | codec B/rec | encode µs/chunk (min / median) | decode µs/chunk (min / median) |');
console.log('|---|---|---|---|---|---|');
for (const [name, values] of sets) {
  const chunks = Array.from({ length: CHUNKS }, (_, c) => chunkOf(c * RECORDS_PER_CHUNK, values));
  const encoded = chunks.map(encodeChunk);
  chunks.forEach((c, i) => {
    if (!decodeChunk(encoded[i], c.length).equals(c)) throw new Error(`chunk ${i} of ${name} does not round-trip`);
  });
  const perRecord = (bytes: number): string => (bytes / (CHUNKS * RECORDS_PER_CHUNK)).toFixed(2);
  const sum = (bs: Buffer[]): number => bs.reduce((n, b) => n + b.length, 0);
  const encode = cpuUs(CHUNKS, (i) => encodeChunk(chunks[i]));
  const decode = cpuUs(CHUNKS * 10, (i) => decodeChunk(encoded[i % CHUNKS], chunks[i % CHUNKS].length));
  const us = (t: { min: number; median: number }): string => `${t.min.toFixed(1)} / ${t.median.toFixed(1)}`;
  console.log(`| ${name} | ${perRecord(sum(chunks))} | ${perRecord(sum(chunks.map((c) => deflateRawSync(c))))} | ${perRecord(sum(encoded))} | ${us(encode)} | ${us(decode)} |`);
}

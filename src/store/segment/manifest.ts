/**
 * MANIFEST: two 4 KiB slots written alternately (slot = seq % 2), each sealed by its own CRC (the bbolt
 * meta-page pattern). A torn write can only damage the slot being written; the other still holds the
 * previous state. Slot layout: magic u32 | format u32 | seq f64 | bodyLen u32 | crc u32 | JSON body.
 */
import fs from 'node:fs';
import { crc32c } from '../format/crc32c.js';
import { u32 } from '../format/frame.js';
import { type FileIo, fsyncDirSync } from '../base/file-io.js';
import { assert } from '../base/constants.js';
import { SerialQueue } from '../../util/atomic-file.js';

export const MANIFEST_FILE = 'MANIFEST';
export const MANIFEST_SLOT_BYTES = 4096;
const MAGIC = 0x4e414d53; // "SMAN"
const FORMAT = 1;
const HEAD = 24;

export interface Checkpoint {
  /** Segment the checkpoint refers to; the active one when written. */
  segNo: number;
  /** Everything before this offset was fdatasync'ed. */
  offset: number;
  /** CRC of the frame ending at `offset` (0 when none): cheap proof that the file is the one we left. */
  lastFrameCrc: number;
  lastId: number;
}

export interface Manifest {
  /** Segments below this number are retired (retention) and deleted if still present. */
  firstSegNo: number;
  firstId: number;
  /** Written by close(): with a matching checkpoint, open adopts the state without a scan. */
  clean: boolean;
  checkpoint: Checkpoint;
}

export function encodeSlot(m: Manifest, seq: number): Buffer {
  const body = Buffer.from(JSON.stringify(m), 'utf8');
  assert(HEAD + body.length <= MANIFEST_SLOT_BYTES, 'manifest body fits its slot');
  const buf = Buffer.alloc(MANIFEST_SLOT_BYTES);
  buf.writeUInt32LE(MAGIC, 0);
  buf.writeUInt32LE(FORMAT, 4);
  buf.writeDoubleLE(seq, 8);
  buf.writeUInt32LE(body.length, 16);
  body.copy(buf, HEAD);
  buf.writeUInt32LE(crc32c(buf, HEAD, HEAD + body.length, crc32c(buf, 0, 20)), 20);
  return buf;
}

function decodeSlot(buf: Buffer, off: number): { seq: number; m: Manifest } | undefined {
  if (buf.length < off + HEAD || u32(buf, off) !== MAGIC || u32(buf, off + 4) !== FORMAT) return undefined;
  const len = u32(buf, off + 16);
  if (HEAD + len > MANIFEST_SLOT_BYTES || off + HEAD + len > buf.length) return undefined;
  const crc = crc32c(buf, off + HEAD, off + HEAD + len, crc32c(buf, off, off + 20));
  if (crc !== u32(buf, off + 20)) return undefined;
  try {
    const m = JSON.parse(buf.toString('utf8', off + HEAD, off + HEAD + len)) as Manifest;
    return isManifest(m) ? { seq: buf.readDoubleLE(off + 8), m } : undefined;
  } catch {
    return undefined;
  }
}

function isManifest(m: Manifest): boolean {
  const c = m?.checkpoint;
  return (
    Number.isSafeInteger(m.firstSegNo) &&
    Number.isSafeInteger(m.firstId) &&
    typeof m.clean === 'boolean' &&
    Number.isSafeInteger(c?.segNo) &&
    Number.isSafeInteger(c?.offset) &&
    Number.isSafeInteger(c?.lastFrameCrc) &&
    Number.isSafeInteger(c?.lastId)
  );
}

export interface ManifestRead {
  manifest?: Manifest;
  seq: number;
  /** How many of the two slots failed their checks (a torn or never-written slot counts). */
  badSlots: number;
}

/** The newest slot whose CRC holds. */
export function readManifestSync(dir: string): ManifestRead {
  let buf: Buffer;
  try {
    buf = fs.readFileSync(`${dir}/${MANIFEST_FILE}`);
  } catch {
    return { seq: 0, badSlots: 2 };
  }
  const a = decodeSlot(buf, 0);
  const b = decodeSlot(buf, MANIFEST_SLOT_BYTES);
  const best = a && b ? (a.seq >= b.seq ? a : b) : (a ?? b);
  return { manifest: best?.m, seq: best?.seq ?? 0, badSlots: (a ? 0 : 1) + (b ? 0 : 1) };
}

/** Serialises slot writes of one model; each write goes to the slot not holding the newest state. */
export class ManifestWriter {
  private readonly writes = new SerialQueue();
  /** Set when close() is called: writes asked for later are refused, never sent to a closed fd number. */
  private closing = false;

  constructor(
    private readonly io: FileIo,
    private readonly fd: number,
    private seq: number,
  ) {}

  static createSync(io: FileIo, dir: string, m: Manifest): ManifestWriter {
    const fd = fs.openSync(`${dir}/${MANIFEST_FILE}`, 'w+');
    fs.writeSync(fd, Buffer.alloc(2 * MANIFEST_SLOT_BYTES), 0, 2 * MANIFEST_SLOT_BYTES, 0);
    const w = new ManifestWriter(io, fd, 0);
    w.writeSync(m);
    fsyncDirSync(dir);
    return w;
  }

  static openSync(io: FileIo, dir: string, seq: number): ManifestWriter {
    return new ManifestWriter(io, fs.openSync(`${dir}/${MANIFEST_FILE}`, 'r+'), seq);
  }

  writeSync(m: Manifest): void {
    this.seq++;
    const slot = encodeSlot(m, this.seq);
    fs.writeSync(this.fd, slot, 0, slot.length, (this.seq % 2) * MANIFEST_SLOT_BYTES);
    fs.fdatasyncSync(this.fd);
  }

  /** `state` is read when the write starts, so a queued write always stores the newest state. */
  write(state: () => Manifest): Promise<void> {
    if (this.closing) return Promise.reject(new Error('manifest is closed'));
    return this.writes.run(() => this.writeNow(state()));
  }

  private async writeNow(m: Manifest): Promise<void> {
    const seq = this.seq + 1;
    await this.io.overwrite(this.fd, encodeSlot(m, seq), (seq % 2) * MANIFEST_SLOT_BYTES);
    this.seq = seq;
  }

  /** After the writes already queued. */
  close(): Promise<void> {
    if (this.closing) return this.writes.run(async () => {});
    this.closing = true;
    return this.writes.run(async () => fs.closeSync(this.fd));
  }
}

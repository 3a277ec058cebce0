/**
 * The per-model cursors of the uplink, `<data_dir>/uplink/cursors.json`: for each model the generation
 * and the first id whose newest version the hub has not acknowledged. One file for every model, replaced
 * atomically (util/atomic-file.ts) at most once per `flushMs`, so a kill -9 resends at most that much.
 * What is on disk is also the retention floor: records the file does not yet count as acknowledged stay.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../util/atomic-file.js';

export interface Cursor {
  generation: string;
  /** The first id not yet acknowledged (in its newest version). */
  nextId: number;
}

const FORMAT = 1;

export function cursorsPath(dataDir: string): string {
  return join(dataDir, 'uplink', 'cursors.json');
}

export class CursorBook {
  private readonly current = new Map<string, Cursor>();
  private readonly onDisk = new Map<string, Cursor>();
  private dirty = false;
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string,
    private readonly gateway: string,
  ) {}

  /** Cursors written under another gateway id do not count: the hub never saw this one's records. */
  static async open(dataDir: string, gateway: string, warn: (message: string) => void): Promise<CursorBook> {
    const book = new CursorBook(cursorsPath(dataDir), gateway);
    let text: string | undefined;
    try {
      text = await readFile(book.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (text === undefined) return book;
    let parsed: { format?: unknown; gateway?: unknown; models?: Record<string, Cursor> };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      warn(`${book.file} is not JSON: every model is shipped again from its first record`);
      return book;
    }
    if (parsed.format !== FORMAT || parsed.gateway !== gateway || typeof parsed.models !== 'object' || parsed.models === null) {
      warn(`${book.file} belongs to gateway ${String(parsed.gateway)}, not ${gateway}: every model is shipped from its first record`);
      return book;
    }
    for (const [model, c] of Object.entries(parsed.models)) {
      if (typeof c?.generation === 'string' && Number.isSafeInteger(c.nextId) && c.nextId >= 1) {
        book.current.set(model, { generation: c.generation, nextId: c.nextId });
        book.onDisk.set(model, { generation: c.generation, nextId: c.nextId });
      }
    }
    return book;
  }

  get(model: string): Cursor | undefined {
    return this.current.get(model);
  }

  /** What a crash would resume from. */
  persisted(model: string): Cursor | undefined {
    return this.onDisk.get(model);
  }

  set(model: string, cursor: Cursor): void {
    const c = this.current.get(model);
    if (c?.generation === cursor.generation && c.nextId === cursor.nextId) return;
    this.current.set(model, { ...cursor });
    this.dirty = true;
  }

  /** Writes the file when something changed; one write at a time. */
  flush(): Promise<void> {
    this.writing = this.writing.then(async () => {
      if (!this.dirty) return;
      this.dirty = false;
      const models = Object.fromEntries(this.current);
      const snapshot = new Map([...this.current].map(([k, v]) => [k, { ...v }]));
      try {
        await writeFileAtomic(this.file, `${JSON.stringify({ format: FORMAT, gateway: this.gateway, models })}\n`);
      } catch (err) {
        this.dirty = true;
        throw err;
      }
      this.onDisk.clear();
      for (const [k, v] of snapshot) this.onDisk.set(k, v);
    });
    return this.writing;
  }
}

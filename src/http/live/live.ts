/**
 * Live reads (contract 11): a feed per model watches its newest record (every LIVE_TICK_MS, from memory)
 * and, when ids advanced, reads the new records once for all its subscribers; an update-last (same id,
 * new values) is sent again. No hook into the write path: a writer never waits for a reader.
 *
 * A subscriber that reads too slowly never holds records in our memory: when its socket refuses a write,
 * the records it misses are only counted as an id range, and once the socket drains it gets one `gap`
 * with that range and continues from the newest record. What waits in the socket is at most the one
 * delivery that filled it.
 *
 * A model that is deleted or returned to draft (its records deleted) ends its subscriptions with one
 * `gone` text naming it: its log will never move again, and a silent stream would look like a quiet plant.
 * The hub learns of it from the registry's model list (watchModels), compared by identity each tick.
 */
import type { RecordView } from '../../store/base/types.js';
import { formatRecord, isoSeconds } from '../core/format.js';

export const LIVE_TICK_MS = 10;
/** mode=latest: at most one record per model per this many ms. */
export const LATEST_MIN_GAP_MS = 100;
/** Records a feed reads in one tick; beyond, the older ones are a gap for everyone. */
export const FEED_READ_MAX = 10_000;

export interface LiveLog {
  latest(select?: readonly string[]): RecordView | undefined;
  iterate(range: { fromId?: number; toId?: number }): AsyncGenerator<RecordView, void, undefined>;
}

export type LiveMode = 'all' | 'latest';

/** The models as the registry holds them: a new frozen array after every change. */
export interface LiveModels {
  readonly models: ReadonlyArray<{ readonly uuid: string; readonly name: string; readonly published: boolean }>;
  /** The model's log now: a restore or import swaps in a new one; throws while the swap runs. */
  log(uuid: string): LiveLog;
}

/** What a transport (SSE, WebSocket) gives a subscription. */
export interface LiveSink {
  /** Names the wire format: a record's text is made once per format and projection for every client. */
  readonly format: string;
  recordText(uuid: string, id: number, json: string): string;
  gapText(uuid: string, fromId: number, toId: number): string;
  /** The model was deleted or returned to draft: `msg` says which; its subscription has ended. */
  goneText(uuid: string, msg: string): string;
  /** Writes the texts of one delivery at once; false: the socket is full, write nothing more until `drained`. */
  write(texts: readonly string[]): boolean;
}

interface Cursor {
  uuid: string;
  log: LiveLog;
  select: readonly string[] | undefined;
  selectKey: string;
  mode: LiveMode;
  /** Newest id sent (or skipped into a gap). */
  sentId: number;
  sentView: RecordView | undefined;
  gap: { from: number; to: number } | undefined;
  /** mode=latest: the newest record not sent yet, and when the last one went. */
  pending: RecordView | undefined;
  sentAtMs: number;
  timer: NodeJS.Timeout | undefined;
}

/** One connection's subscriptions. */
export class LiveClient {
  private readonly cursors = new Map<string, Cursor>();
  private blocked = false;
  /** Texts of the delivery being made (written by flush). */
  private outbox: string[] = [];
  closed = false;
  private end: () => void = () => {};
  /** Resolves when the client is closed (it left, or the server shuts down). */
  readonly ended = new Promise<void>((resolve) => (this.end = resolve));

  constructor(
    private readonly hub: LiveHub,
    private readonly sink: LiveSink,
    /** SSE: a stream opened for fixed models ends with the last of them; a WebSocket may subscribe again. */
    private readonly closeWhenNoModels: boolean,
  ) {}

  /**
   * Starts sending `uuid`: the records after `afterId` (mode all), else its newest record; then live.
   * The catch-up reads until it reaches the newest id in one synchronous step, so nothing falls between.
   * `name`: the model's, for the `gone` text should it be deleted before the hub first looks it up.
   */
  async subscribe(uuid: string, log: LiveLog, opts: { name: string; select?: readonly string[]; mode: LiveMode; afterId?: number }): Promise<void> {
    this.unsubscribe(uuid);
    const c: Cursor = {
      uuid,
      log,
      select: opts.select,
      selectKey: opts.select?.join(',') ?? '*',
      mode: opts.mode,
      sentId: 0,
      sentView: undefined,
      gap: undefined,
      pending: undefined,
      sentAtMs: 0,
      timer: undefined,
    };
    if (opts.afterId !== undefined && opts.mode === 'all') {
      c.sentId = opts.afterId;
      for (;;) {
        const newest = log.latest();
        if (newest === undefined || (newest.id as number) <= c.sentId || this.closed) break;
        const to = newest.id as number;
        const from = Math.max(c.sentId + 1, to - FEED_READ_MAX + 1);
        if (from > c.sentId + 1) this.sendGap(c, c.sentId + 1, from - 1);
        for await (const r of log.iterate({ fromId: from, toId: to })) this.deliver(c, r);
        this.flush();
        c.sentId = Math.max(c.sentId, to);
      }
    } else {
      const newest = log.latest();
      if (newest !== undefined) this.deliver(c, newest);
      this.flush();
    }
    if (this.closed) return;
    this.cursors.set(uuid, c);
    this.hub.attach(uuid, log, this, opts.name);
  }

  unsubscribe(uuid: string): void {
    const c = this.cursors.get(uuid);
    if (!c) return;
    clearTimeout(c.timer);
    this.cursors.delete(uuid);
    this.hub.detach(uuid, this);
  }

  close(): void {
    this.closed = true;
    for (const uuid of [...this.cursors.keys()]) this.unsubscribe(uuid);
    this.end();
  }

  /** From the hub: `uuid` is gone. Written even to a full socket: it is short and the subscription's last. */
  modelGone(uuid: string, msg: string): void {
    if (!this.cursors.has(uuid)) return;
    this.unsubscribe(uuid);
    this.outbox.push(this.sink.goneText(uuid, msg));
    this.flush();
    if (this.closeWhenNoModels && this.cursors.size === 0) this.close();
  }

  /** The socket took everything: send the gaps, then the newest record of each model that had one. */
  drained(): void {
    this.blocked = false;
    for (const c of this.cursors.values()) {
      if (this.blocked) return;
      if (c.gap === undefined) continue;
      const { from, to } = c.gap;
      c.gap = undefined;
      // The gap ends before the newest record, which is sent: the client is current again at once.
      const newest = c.log.latest();
      const newestId = (newest?.id as number | undefined) ?? 0;
      const gapTo = newestId >= from ? Math.min(to, newestId - 1) : to;
      if (from <= gapTo) this.sendGap(c, from, gapTo);
      if (newest !== undefined && newestId >= from) this.deliver(c, newest);
      this.flush();
    }
  }

  /** From the feed: records in id order (an update-last comes again with its id); `restarted` after a clear. */
  receive(uuid: string, records: readonly RecordView[], restarted: boolean): void {
    const c = this.cursors.get(uuid);
    if (!c) return;
    if (restarted) c.sentId = 0;
    for (const r of records) {
      const id = r.id as number;
      if (id < c.sentId || (id === c.sentId && r === c.sentView)) continue;
      if (c.mode === 'latest') this.offerLatest(c, r);
      else this.deliver(c, r);
    }
    this.flush();
  }

  private offerLatest(c: Cursor, r: RecordView): void {
    c.pending = r;
    const waitMs = c.sentAtMs + LATEST_MIN_GAP_MS - Date.now();
    if (waitMs <= 0) return this.flushLatest(c);
    c.timer ??= setTimeout(() => {
      c.timer = undefined;
      this.flushLatest(c);
    }, waitMs);
  }

  private flushLatest(c: Cursor): void {
    const r = c.pending;
    if (r === undefined || !this.cursors.has(c.uuid)) return;
    // A send made while a timer was due (a busy loop runs the feed's tick first) restarts the 100 ms:
    // the old timer would send the next record at once.
    clearTimeout(c.timer);
    c.timer = undefined;
    c.pending = undefined;
    c.sentAtMs = Date.now();
    this.deliver(c, r);
    this.flush();
  }

  private deliver(c: Cursor, r: RecordView): void {
    const id = r.id as number;
    c.sentView = r;
    if (this.blocked || c.gap !== undefined) {
      c.gap = { from: c.gap?.from ?? id, to: id };
      c.sentId = id;
      return;
    }
    c.sentId = id;
    this.outbox.push(this.hub.recordText(this.sink, c.uuid, r, c.select, c.selectKey));
  }

  private sendGap(c: Cursor, from: number, to: number): void {
    if (this.blocked) {
      c.gap = { from: Math.min(c.gap?.from ?? from, from), to: Math.max(c.gap?.to ?? to, to) };
      return;
    }
    this.outbox.push(this.sink.gapText(c.uuid, from, to));
  }

  /** One write per delivery: a tick's records for a client go out together. */
  private flush(): void {
    if (this.outbox.length === 0 || this.closed) return;
    const texts = this.outbox;
    this.outbox = [];
    if (!this.sink.write(texts)) this.blocked = true;
  }
}

interface Feed {
  log: LiveLog;
  clients: Set<LiveClient>;
  lastId: number;
  lastView: RecordView | undefined;
  reading: boolean;
  /** The model list this feed's model was last looked up in, and its name (for the `gone` text). */
  checkedModels: LiveModels['models'] | undefined;
  name: string;
}

/** The feeds of every watched model, and the tick that drives them. */
export class LiveHub {
  private readonly feeds = new Map<string, Feed>();
  private timer: NodeJS.Timeout | undefined;
  private readonly clients = new Set<LiveClient>();
  /** Wire texts of records by format and projection (every client shares them). */
  private readonly textCache = new WeakMap<RecordView, Map<string, string>>();
  private registry: LiveModels | undefined;

  /** Ends the subscriptions of models that leave `registry` or go back to draft. */
  watchModels(registry: LiveModels): void {
    this.registry = registry;
  }

  client(sink: LiveSink, options: { closeWhenNoModels?: boolean } = {}): LiveClient {
    const c = new LiveClient(this, sink, options.closeWhenNoModels === true);
    this.clients.add(c);
    return c;
  }

  forget(client: LiveClient): void {
    client.close();
    this.clients.delete(client);
  }

  attach(uuid: string, log: LiveLog, client: LiveClient, name: string): void {
    let f = this.feeds.get(uuid);
    if (!f || f.log !== log) {
      const newest = log.latest();
      f = {
        log,
        clients: f?.clients ?? new Set(),
        lastId: (newest?.id as number | undefined) ?? 0,
        lastView: newest,
        reading: false,
        checkedModels: undefined,
        name,
      };
      this.feeds.set(uuid, f);
    }
    f.clients.add(client);
    this.timer ??= setInterval(() => this.tick(), LIVE_TICK_MS);
  }

  detach(uuid: string, client: LiveClient): void {
    const f = this.feeds.get(uuid);
    if (!f) return;
    f.clients.delete(client);
    if (f.clients.size === 0) this.feeds.delete(uuid);
    if (this.feeds.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Ends every subscription (server shutdown). */
  close(): void {
    for (const c of [...this.clients]) this.forget(c);
  }

  /** A record's wire text for a format and projection, made once for every client that sends it. */
  recordText(sink: LiveSink, uuid: string, r: RecordView, select: readonly string[] | undefined, selectKey: string): string {
    let byKey = this.textCache.get(r);
    if (!byKey) this.textCache.set(r, (byKey = new Map()));
    const key = `${sink.format}|${uuid}|${selectKey}`;
    let text = byKey.get(key);
    if (text === undefined) {
      text = sink.recordText(uuid, r.id as number, JSON.stringify(formatRecord(select === undefined ? r : pick(r, select), isoSeconds)));
      byKey.set(key, text);
    }
    return text;
  }

  private tick(): void {
    for (const [uuid, f] of this.feeds) {
      if (this.endIfGone(uuid, f)) continue;
      if (!f.reading) void this.poll(uuid, f);
    }
  }

  /** Only when the model list changed since this feed last looked: one identity check per tick otherwise. */
  private endIfGone(uuid: string, f: Feed): boolean {
    const models = this.registry?.models;
    if (models === undefined || models === f.checkedModels) return false;
    const model = models.find((m) => m.uuid === uuid);
    if (model?.published === true) {
      if (!this.followSwap(uuid, f)) return false;
      f.checkedModels = models;
      f.name = model.name;
      return false;
    }
    f.checkedModels = models;
    const named = `model ${f.name} (${uuid})`;
    const msg = model === undefined ? `${named} was deleted` : `${named} was returned to draft (schema/fix) and its records deleted`;
    // A copy: each client's unsubscribe detaches it from this feed.
    for (const c of [...f.clients]) c.modelGone(uuid, msg);
    return true;
  }

  /**
   * A restore or import swapped in a new log: the feed reads that one from now on, from the id it had
   * reached (poll treats a lower newest id as a restart). False while the swap still runs: look again
   * next tick.
   */
  private followSwap(uuid: string, f: Feed): boolean {
    let log: LiveLog;
    try {
      log = (this.registry as LiveModels).log(uuid);
    } catch {
      return false;
    }
    if (log !== f.log && !f.reading) {
      f.log = log;
      f.lastView = undefined;
    }
    return log === f.log;
  }

  private async poll(uuid: string, f: Feed): Promise<void> {
    const newest = f.log.latest();
    if (newest === undefined || newest === f.lastView) return;
    const newestId = newest.id as number;
    let records: RecordView[];
    const restarted = newestId < f.lastId;
    if (newestId === f.lastId) {
      records = [newest]; // an update-last
    } else {
      f.reading = true;
      records = [];
      try {
        const from = Math.max(restarted ? 1 : f.lastId + 1, newestId - FEED_READ_MAX + 1);
        for await (const r of f.log.iterate({ fromId: from, toId: newestId - 1 })) records.push(r);
      } catch {
        records = [];
      } finally {
        f.reading = false;
      }
      records.push(newest);
    }
    f.lastId = newestId;
    f.lastView = newest;
    for (const c of f.clients) c.receive(uuid, records, restarted);
  }
}

function pick(r: RecordView, select: readonly string[]): RecordView {
  const out: RecordView = {};
  for (const key in r) if (select.includes(key)) out[key] = r[key];
  return out;
}

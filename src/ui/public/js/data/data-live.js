// New records of one model from the stream, after a known id, handed over in batches. What the view
// cannot merge (a gap, the newest record updated in place, ids restarting after a clear) asks for a
// reload instead.
import { getSecret } from '../core/api.js';
import { openEventStream } from './live.js';
import { noteServerDate } from '../core/time.js';
import { secretHeader } from './data-query.js';

/** Records are handed over this often, so a fast model does not redraw per record. */
const BATCH_MS = 250;

/**
 * @param {{
 *   uuid: string, afterId: number, select?: string,
 *   onBatch: (records: object[]) => void,   new records, oldest first
 *   onUpdated: (record: object) => void,    the newest record changed in place
 *   onReload: () => void,                   the view must read its window again
 *   onStatus: (s: {state: string, retryInMs?: number, error?: Error}) => void,
 * }} opts
 * @returns {{ close(): void }}
 */
export function followModel(opts) {
  let lastId = opts.afterId;
  let pending = [];
  let timer = 0;

  const flush = () => {
    timer = 0;
    const batch = pending;
    pending = [];
    if (batch.length) opts.onBatch(batch);
  };

  const onEvent = (ev) => {
    // A gap: the gateway skipped records while this page could not keep up.
    if (ev.event === 'gap') { opts.onReload(); return; }
    if (ev.event !== 'record') return;
    let rec;
    try { rec = JSON.parse(ev.data).record; } catch { return; }
    if (!rec || typeof rec.id !== 'number') return;
    if (rec.id > lastId) {
      lastId = rec.id;
      pending.push(rec);
      if (!timer) timer = setTimeout(flush, BATCH_MS);
    } else if (rec.id === lastId && pending.length && pending[pending.length - 1].id === rec.id) {
      pending[pending.length - 1] = rec;
    } else {
      // The newest record was updated after the view counted it, or ids restarted after a clear.
      opts.onUpdated(rec);
      opts.onReload();
    }
  };

  const stream = openEventStream({
    path: 'datacenter/stream',
    // On a reconnect the stream replays what was missed after the last id seen.
    params: () => ({ uuid: opts.uuid, after: `${opts.uuid}:${lastId}`, select: opts.select }),
    headers: async (fresh) => secretHeader(await getSecret(fresh), 'datacenter/stream'),
    onResponse: noteServerDate,
    onEvent,
    onStatus: opts.onStatus,
  });
  return {
    close() {
      stream.close();
      clearTimeout(timer);
      pending = [];
    },
  };
}

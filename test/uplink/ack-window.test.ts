/**
 * The ack window against a publisher that answers like a hub (ack-window.ts, issue 34): the cursor moves
 * only over batches the hub says it stored. nats-server before 2.10 answers `duplicate: true, seq: 0` for a
 * message id it staged for a proposal that was then lost (quorum loss, leader change): the message is not in
 * the stream, so that answer must not move the cursor.
 */
import { describe, expect, it } from 'vitest';
import { AckWindow, type OutgoingBatch } from '../../src/uplink/ack-window.js';
import { InflightBudget } from '../../src/uplink/budget.js';
import type { Message } from '../../src/uplink/message.js';
import type { PublishAck, Publisher } from '../../src/uplink/nats-link.js';

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

function batch(firstId: number, lastId: number): OutgoingBatch {
  const body = Buffer.from(`${firstId}-${lastId}`);
  const message: Message = { subject: 'edc.gw.m', msgId: `gw:m:g:${firstId}-${lastId}:x`, headers: {}, body };
  return { firstId, lastId, records: lastId - firstId + 1, lost: 0, firstCreateAtMs: 0, message };
}

/** Answers each publish with the next scripted ack (an Error: rejects), and records what was sent. */
function scripted(answers: (PublishAck | Error)[]): Publisher & { sent: string[] } {
  const sent: string[] = [];
  return {
    connected: true,
    sent,
    publish(m: Message): Promise<PublishAck> {
      sent.push(m.msgId);
      const a = answers.shift();
      if (a === undefined) throw new Error('no answer scripted');
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    },
  };
}

function window(link: Publisher, acked = 1) {
  const failures: string[] = [];
  const w = new AckWindow({ link, budget: new InflightBudget(), onAdvance: () => {}, onAck: () => {}, onFailure: (e) => failures.push(e.message) }, acked);
  return { w, failures };
}

describe('AckWindow', () => {
  it('a duplicate ack at stream sequence 0 is not stored: the cursor stays, the batch is sent again', async () => {
    const link = scripted([{ duplicate: true, seq: 0 }, { duplicate: false, seq: 935 }]);
    const { w, failures } = window(link, 1501);
    w.send(batch(1501, 1580));
    await flush();
    expect(w.acked).toBe(1501);
    expect(w.failing).toBe(true);
    expect(failures[0]).toMatch(/sequence 0/);
    expect(w.counts.ackedRecords).toBe(0);

    w.resendFailed();
    await flush();
    expect(link.sent).toEqual(['gw:m:g:1501-1580:x', 'gw:m:g:1501-1580:x']);
    expect(w.acked).toBe(1581);
    expect(w.counts.ackedRecords).toBe(80);
    expect(w.isEmpty).toBe(true);
  });

  it('a duplicate ack naming its sequence is an acknowledgement', async () => {
    const { w } = window(scripted([{ duplicate: true, seq: 17 }]));
    w.send(batch(1, 80));
    await flush();
    expect(w.acked).toBe(81);
    expect(w.counts.duplicateAcks).toBe(1);
  });

  it('a later batch acknowledged does not move the cursor past an earlier one that failed', async () => {
    const link = scripted([new Error('timeout'), { duplicate: false, seq: 2 }, { duplicate: false, seq: 3 }]);
    const { w } = window(link);
    w.send(batch(1, 80));
    w.send(batch(81, 160));
    await flush();
    expect(w.acked).toBe(1);
    expect(w.failing).toBe(true);
    w.resendFailed();
    await flush();
    expect(w.acked).toBe(161);
  });
});

#!/usr/bin/env node
// The store-race storm through real HTTP against the real CLI (`dist/cli.js serve`): 64 KiB segments,
// sync = interval, retention_max_records = 3000. Per model, for `seconds`: one writer pushing NDJSON (200
// payloads a push), four readers (queryDataList size 1000 asc, size 100 desc, queryLastData, queryAggregate), an
// exporter (exportData jsonl) and clearSchemaData every second. Then a quiet tail of pushes, and the
// checks: no 5xx and no refused push at any point, every record seen by any read is whole and belongs
// to its model, and what is stored is exactly the acknowledged records since the last clear (less the
// oldest ones retention removed, keeping 3000 within one segment), the same after a clean restart.
//
//   node test/reliability/storm.mjs [--seconds 15] [--models 2]     (needs `npx tsc -p tsconfig.json`)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { SECRET, call as callOrThrow, payload, pushNdjson, readSettled, lastData, setupPipeline, sleep, startService, writeConfig } from './support/service.mjs';

export const RETENTION_RECORDS = 3000;
const SEGMENT_BYTES = 65536;
const LINES_PER_PUSH = 200;
const TAIL_PUSHES = 30;
/** Model m's sequence numbers start here, so a record's seq also names its model. */
const SEQ_BASE = 100_000_000;

/**
 * What a storm does at least, whatever the machine's load: it runs `seconds`, then on until each kind of
 * client did this much (a busy machine makes it longer, never thinner), within a ceiling of 10 minutes.
 */
export function stormMinimums(models, seconds) {
  return { pushes: models * 30 + 1, clears: models * Math.floor(seconds / 3), reads: 101, aggregates: models * 10 + 1 };
}

/**
 * Runs one storm; returns `{ problems, counts }` (problems empty = passed). `models` models side by side,
 * each with its own clients.
 */
export async function runStorm({ seconds = 10, models = 1, sealedFdsMax = undefined, progress = () => {} } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-storm-'));
  const problems = [];
  const problem = (msg) => {
    if (problems.length < 40) problems.push(msg);
  };
  const counts = { pushes: 0, records: 0, pages: 0, lastReads: 0, aggregates: 0, exports: 0, exportedRecords: 0, clears: 0, status5xx: 0, refused: 0 };
  const { file } = writeConfig(dir, {
    // The default interval: pushes answer without waiting for it (contract 9); a restart still keeps them all.
    store: {
      sync: 'interval',
      segment_bytes: SEGMENT_BYTES,
      retention_max_records: RETENTION_RECORDS,
      ...(sealedFdsMax === undefined ? {} : { sealed_fds_max: sealedFdsMax }),
    },
  });
  let svc = await startService(file);
  try {
    const states = [];
    for (let m = 0; m < models; m++) states.push(newModelState(m, await setupPipeline(svc.base, `storm-${m}`)));
    const answered = (what, answer) => {
      if (answer.status >= 500) counts.status5xx++;
      if (answer.status !== 200) problem(`${what}: HTTP ${answer.status} ${String(answer.text ?? answer.error).slice(0, 200)}`);
      return answer.status === 200;
    };
    const deadline = Date.now() + seconds * 1000;
    const ceiling = deadline + 600_000;
    const min = stormMinimums(models, seconds);
    const enough = () =>
      counts.pushes >= min.pushes && counts.clears >= min.clears && counts.pages + counts.exports + counts.lastReads >= min.reads && counts.aggregates >= min.aggregates;
    const running = () => Date.now() < deadline || (!enough() && Date.now() < ceiling);
    const clients = [];
    for (const st of states) {
      clients.push(writer(svc.base, st, running, counts, answered));
      for (const [size, order] of [[1000, 'asc'], [100, 'desc']]) clients.push(pager(svc.base, st, size, order, running, counts, answered, problem));
      clients.push(lastPoller(svc.base, st, running, counts, answered, problem));
      clients.push(aggregator(svc.base, st, Date.now() - 1000, running, counts, answered, problem));
      clients.push(exporter(svc.base, st, running, counts, answered, problem));
      clients.push(clearer(svc.base, st, running, counts, answered));
    }
    const ticker = setInterval(() => progress(`storm: ${Math.max(0, Math.ceil((deadline - Date.now()) / 1000))} s left, ${JSON.stringify(counts)}`), 2000);
    await Promise.all(clients);
    clearInterval(ticker);
    for (const st of states) for (let k = 0; k < TAIL_PUSHES; k++) await pushOnce(svc.base, st, counts, answered);

    const before = [];
    for (const st of states) before.push(await checkStored(svc.base, st, problem, 'after the storm'));
    progress('storm: restarting the service');
    const exit = await svc.kill('SIGTERM');
    if (exit.code !== 0) problem(`SIGTERM exit ${exit.code ?? exit.signal}: ${svc.log.slice(-5).join('\n')}`);
    svc = await startService(file);
    for (let m = 0; m < states.length; m++) {
      const after = await checkStored(svc.base, states[m], problem, 'after a restart');
      // Retention may catch up at the restart (a sealed segment it could not yet remove): the oldest may go, nothing else.
      const suffix = before[m].slice(before[m].length - after.length);
      if (after.length > before[m].length || JSON.stringify(after) !== JSON.stringify(suffix)) {
        problem(`model ${m}: after a clean restart the records are not the newest ${after.length} of the ${before[m].length} before it`);
      }
    }
    const recoveryNotes = svc.log.filter((l) => l.includes('recovery of model'));
    if (recoveryNotes.length > 0) problem(`a clean restart needed recovery: ${recoveryNotes[0]}`);
    counts.records = before.reduce((n, r) => n + r.length, 0);
    return { problems, counts };
  } finally {
    await svc.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A call whose network failure (the service died or cut the connection) is an answer with status 0. */
async function call(base, urlPath, init) {
  try {
    return await callOrThrow(base, urlPath, init);
  } catch (err) {
    await sleep(10);
    return { status: 0, text: `network: ${err?.cause?.code ?? err?.message ?? err}`, body: undefined };
  }
}

function newModelState(m, pipeline) {
  return {
    m,
    pipeline,
    nextSeq: (m + 1) * SEQ_BASE,
    nextPush: 1,
    /** pushNo -> { seqs, acked, clearsAnsweredAtSend, clearsStartedAtAnswer } */
    pushes: new Map(),
    clearsStarted: 0,
    clearsAnswered: 0,
  };
}

async function pushOnce(base, st, counts, answered) {
  const pushNo = st.nextPush++;
  const seqs = Array.from({ length: LINES_PER_PUSH }, () => st.nextSeq++);
  const push = { seqs, acked: false, clearsAnsweredAtSend: st.clearsAnswered, clearsStartedAtAnswer: Infinity };
  st.pushes.set(pushNo, push);
  counts.pushes++;
  const answer = await pushNdjson(base, st.pipeline, seqs.map((seq, i) => payload(seq, pushNo, i, st.m + 1)));
  push.clearsStartedAtAnswer = st.clearsStarted;
  if (!answered(`model ${st.m} push ${pushNo}`, answer)) return;
  const d = answer.body?.data;
  if (d?.accepted === seqs.length && d?.failed === 0) push.acked = true;
  else counts.refused++;
}

async function writer(base, st, running, counts, answered) {
  while (running()) await pushOnce(base, st, counts, answered);
}

/** A record is whole when its copies of seq agree and it names a line of a push of this model. */
function checkRecord(st, r, where, problem) {
  if (r.temp !== r.conductivity) return problem(`${where}: id ${r.id} mixes two records (temp ${r.temp}, conductivity ${r.conductivity})`);
  if (r.ph_value !== st.m + 1 || Math.floor(r.temp / SEQ_BASE) !== st.m + 1) return problem(`${where}: id ${r.id} belongs to another model: ${JSON.stringify(r)}`);
  const push = st.pushes.get(r.resistivity);
  if (push?.seqs[r.dissolved_oxygen] !== r.temp) problem(`${where}: id ${r.id} seq ${r.temp} is not line ${r.dissolved_oxygen} of push ${r.resistivity}`);
}

async function pager(base, st, size, order, running, counts, answered, problem) {
  let current = 1;
  while (running()) {
    const path = `/api/v1/datacenter/queryDataList?uuid=${st.pipeline.model}&secrets=${SECRET}&size=${size}&order=${order}&current=${current}`;
    const answer = await call(base, path, { token: null });
    counts.pages++;
    if (!answered(`model ${st.m} queryDataList`, answer)) continue;
    const { records, total } = answer.body.data;
    for (const r of records) checkRecord(st, r, `queryDataList size ${size} ${order}`, problem);
    current = total > size * current ? current + 1 : 1;
  }
}

async function lastPoller(base, st, running, counts, answered, problem) {
  while (running()) {
    const answer = await call(base, `/api/v1/datacenter/queryLastData?uuid=${st.pipeline.model}&secrets=${SECRET}`, { token: null });
    counts.lastReads++;
    if (answered(`model ${st.m} queryLastData`, answer) && answer.body.data.id !== undefined) checkRecord(st, answer.body.data, 'queryLastData', problem);
    await sleep(2);
  }
}

/**
 * queryAggregate over the storm in 5 ms buckets (bucket edges fall inside blocks, so blocks are read and
 * decoded): every record has temp and conductivity equal and of this model, so each bucket's counts,
 * minima and maxima must agree and name this model.
 */
async function aggregator(base, st, fromMs, running, counts, answered, problem) {
  while (running()) {
    const q = `uuid=${st.pipeline.model}&secrets=${SECRET}&from=${fromMs}&to=${Date.now() + 1000}&interval=5ms&fn=min,max,count&select=temp,conductivity`;
    const answer = await call(base, `/api/v1/datacenter/queryAggregate?${q}`, { token: null });
    counts.aggregates++;
    if (!answered(`model ${st.m} queryAggregate`, answer)) continue;
    for (const b of answer.body.data.buckets) {
      const { temp, conductivity } = b;
      const same = temp.count === b.count && conductivity.count === b.count && temp.min === conductivity.min && temp.max === conductivity.max;
      const ours = Math.floor(temp.min / SEQ_BASE) === st.m + 1 && Math.floor(temp.max / SEQ_BASE) === st.m + 1;
      if (!same || !ours) problem(`model ${st.m} queryAggregate bucket ${b.start}: ${JSON.stringify(b)}`);
    }
    await sleep(20);
  }
}

async function exporter(base, st, running, counts, answered, problem) {
  while (running()) {
    const answer = await call(base, `/api/v1/datacenter/exportData?uuid=${st.pipeline.model}&format=jsonl`);
    counts.exports++;
    if (!answered(`model ${st.m} exportData`, answer)) continue;
    for (const line of answer.text.split('\n')) {
      if (line.length === 0) continue;
      counts.exportedRecords++;
      checkRecord(st, JSON.parse(line), 'exportData', problem);
    }
  }
}

async function clearer(base, st, running, counts, answered) {
  while (running()) {
    await sleep(1000);
    st.clearsStarted++;
    const answer = await call(base, `/api/v1/datacenter/clearSchemaData?uuid=${st.pipeline.model}`, { method: 'DELETE' });
    counts.clears++;
    answered(`model ${st.m} clearSchemaData`, answer);
    st.clearsAnswered++;
  }
}

/**
 * What must be stored: the lines of acknowledged pushes sent after the last clear was answered, in order,
 * of which retention may have removed the oldest; before them, at most a tail of the pushes that were in
 * flight during the last clear; nothing older. Returns the records read.
 */
async function checkStored(base, st, problem, when) {
  const where = `model ${st.m} ${when}`;
  // Retention may still be catching up (it runs after a seal, in the background, and every minute): a
  // read whose pages saw it remove a segment is read again, so the checks below look at one state.
  const { records, total, settled } = await readSettled(base, st.pipeline.model);
  if (!settled) problem(`${where}: the records kept moving (retention) over 20 reads`);
  if (total !== records.length) problem(`${where}: total ${total} but ${records.length} records read`);
  records.forEach((r, i) => {
    if (r.id !== records[0].id + i) problem(`${where}: id ${r.id} at position ${i} (gap or disorder)`);
    checkRecord(st, r, where, problem);
  });
  const expected = [];
  const maybe = new Set();
  for (const push of st.pushes.values()) {
    if (!push.acked) problem(`${where}: a push was not acknowledged`);
    if (push.clearsAnsweredAtSend === st.clearsAnswered) expected.push(...push.seqs);
    else if (push.clearsStartedAtAnswer === st.clearsStarted) for (const s of push.seqs) maybe.add(s);
  }
  const seqs = records.map((r) => r.temp);
  const tail = seqs.slice(-expected.length);
  const kept = expected.slice(-seqs.length);
  if (JSON.stringify(tail.length <= kept.length ? tail : tail.slice(-kept.length)) !== JSON.stringify(kept)) {
    problem(`${where}: the newest ${kept.length} stored records are not the newest acknowledged ones`);
  }
  for (const s of seqs.slice(0, Math.max(0, seqs.length - expected.length))) {
    if (!maybe.has(s)) problem(`${where}: seq ${s} was cleared or never acknowledged, yet it is stored`);
  }
  // The smallest frame these records make: a 26-byte header and 8 bytes of packed values.
  const perSegment = Math.ceil(SEGMENT_BYTES / 34);
  if (Math.abs(records.length - RETENTION_RECORDS) > perSegment) {
    problem(`${where}: ${records.length} records kept, retention keeps ${RETENTION_RECORDS} within one segment (${perSegment})`);
  }
  const last = await lastData(base, st.pipeline.model);
  if (records.length > 0 && last.id !== records[records.length - 1].id) problem(`${where}: queryLastData id ${last.id}, newest stored ${records.at(-1).id}`);
  return records;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { seconds: { type: 'string' }, models: { type: 'string' }, 'sealed-fds-max': { type: 'string' } } });
  const { problems, counts } = await runStorm({
    seconds: Number(values.seconds ?? 15),
    models: Number(values.models ?? 1),
    sealedFdsMax: values['sealed-fds-max'] === undefined ? undefined : Number(values['sealed-fds-max']),
    progress: (line) => console.error(line),
  });
  console.log(JSON.stringify({ passed: problems.length === 0, counts, problems }, null, 2));
  process.exit(problems.length === 0 ? 0 : 1);
}

/**
 * The bench's HTTP client of the service on loopback: node:http on keep-alive agents, as a gateway's
 * PLC bridge or HMI would connect (not fetch: undici's own cost per request would count against the
 * device). Pushes and reads have agents of their own, so a read never queues behind a push.
 */
import { Agent, type IncomingMessage, request } from 'node:http';
import { Readable } from 'node:stream';
import { BenchError } from '../errors.js';

export interface Answer {
  status: number;
  text: string;
}

/** The credentials the bench writes into its service's configuration. */
export const BENCH_ADMIN = 'bench-admin-token-0123456789abcdef';
export const BENCH_SECRET = 'bench-secret-0123456789';

export class Client {
  private readonly pushAgent: Agent;
  private readonly readAgent = new Agent({ keepAlive: true, maxSockets: 1 });

  constructor(
    readonly port: number,
    pushConnections: number,
  ) {
    this.pushAgent = new Agent({ keepAlive: true, maxSockets: pushConnections });
  }

  /** A push of NDJSON lines to an HTTP input. */
  push(inend: string, token: string, body: Buffer): Promise<Answer> {
    return this.send(this.pushAgent, 'POST', `/api/v1/inends/push?uuid=${inend}`, { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-ndjson' }, body);
  }

  /**
   * A read under the data secret (queryLastData, queryDataList, queryAggregate). With `keep` false the
   * body of a 200 is received whole but not kept (`text` is empty): timed reads of pages would otherwise
   * leave tens of MiB of answers to the garbage collector on a gateway that has little memory.
   */
  read(path: string, keep = true): Promise<Answer> {
    return this.send(this.readAgent, 'GET', path, { 'X-Api-Secret': BENCH_SECRET }, undefined, keep);
  }

  /** An admin call; its `data`, or an error naming the call and the answer. */
  async admin(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const answer = await this.send(this.readAgent, method, path, { Authorization: `Bearer ${BENCH_ADMIN}`, 'Content-Type': 'application/json' }, payload);
    return dataOf(`${method} ${path.replace(/\?.*/, '')}`, answer);
  }

  /** An admin upload streamed from `chunks` (a restore): its `data`. */
  async upload(path: string, chunks: AsyncIterable<string>): Promise<Record<string, unknown>> {
    const answer = await new Promise<Answer>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: this.port, path, method: 'POST', agent: this.readAgent, headers: { Authorization: `Bearer ${BENCH_ADMIN}` } }, (res) =>
        collect(res, true, resolve, reject),
      );
      req.on('error', reject);
      Readable.from(chunks, { highWaterMark: 2 }).on('error', reject).pipe(req);
    });
    return dataOf(`POST ${path.replace(/\?.*/, '')}`, answer);
  }

  /** The text an admin GET answers (/metrics, a backup). */
  async adminText(path: string): Promise<string> {
    const answer = await this.send(this.readAgent, 'GET', path, { Authorization: `Bearer ${BENCH_ADMIN}` });
    if (answer.status !== 200) throw new BenchError(`GET ${path} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    return answer.text;
  }

  close(): void {
    this.pushAgent.destroy();
    this.readAgent.destroy();
  }

  private send(agent: Agent, method: string, path: string, headers: Record<string, string>, body?: Buffer, keep = true): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const sized = body === undefined ? headers : { ...headers, 'Content-Length': String(body.length) };
      const req = request({ host: '127.0.0.1', port: this.port, path, method, agent, headers: sized }, (res) => collect(res, keep, resolve, reject));
      req.on('error', reject);
      req.end(body);
    });
  }
}

function collect(res: IncomingMessage, keep: boolean, resolve: (a: Answer) => void, reject: (e: Error) => void): void {
  const chunks: Buffer[] = [];
  const kept = keep || res.statusCode !== 200;
  res.on('data', (c: Buffer) => kept && chunks.push(c));
  res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
  res.on('error', reject);
}

function dataOf(call: string, answer: Answer): Record<string, unknown> {
  if (answer.status !== 200) throw new BenchError(`${call} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
  return (JSON.parse(answer.text) as { data: Record<string, unknown> }).data;
}

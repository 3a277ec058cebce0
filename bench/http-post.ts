/** The load generators' one HTTP request: a POST of `body` on a keep-alive agent, its status and text. */
import { type Agent, request } from 'node:http';

export interface PostTarget {
  host: string;
  port: number | string;
  /** Path and query. */
  path: string;
}

export function postBody(agent: Agent, target: PostTarget, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ ...target, method: 'POST', agent, headers: { ...headers, 'Content-Length': body.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

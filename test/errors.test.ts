import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  EdgeError,
  InvalidArgumentError,
  ListenError,
  MethodNotAllowedError,
  PushPartlyKeptError,
  StoreReadOnlyError,
  TooManyRequestsError,
  UsageError,
  WorkerLostError,
} from '../src/errors.js';
import { describeValue, mustBe, oneOf, range } from '../src/util/messages.js';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** The server's TypeScript files; src/ui/public is browser code with its own ApiError. */
function serverSources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return path === join(SRC, 'ui') ? [] : serverSources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('errors', () => {
  it('carry a stable code and the HTTP status they map to', () => {
    const e = new InvalidArgumentError("parameter 'size' must be an integer in 1..1000");
    expect(e).toBeInstanceOf(EdgeError);
    expect(e.status).toBe(400);
    expect(e.code).toBe('ERR_INVALID_ARGUMENT');
    const ro = new StoreReadOnlyError('SCHEMAAAAAAAAA', 'disk full');
    expect(ro.status).toBe(503);
    expect(ro.code).toBe('ERR_STORE_READ_ONLY');
    expect(ro.message).toContain('disk full');
  });

  it('declare the headers and data of their answer', () => {
    expect(new InvalidArgumentError('x').headers()).toEqual({});
    expect(new InvalidArgumentError('x').data).toBeNull();
    expect(new MethodNotAllowedError('x', ['GET', 'HEAD']).headers()).toEqual({ Allow: 'GET, HEAD' });
    expect(new TooManyRequestsError('x', 2.5).headers()).toEqual({ 'Retry-After': '3' });
    expect(new StoreReadOnlyError('SCHEMAAAAAAAAA', 'disk full').headers()).toEqual({ 'Retry-After': '5' });
    const kept = new PushPartlyKeptError('x', { accepted: 1, failed: 1, kept: [2] });
    expect(kept.data).toEqual({ accepted: 1, failed: 1, kept: [2] });
    expect(kept.headers()).toEqual({ 'Retry-After': '5' });
  });

  it('that answer no request still carry a stable code', () => {
    expect(new ListenError('x').code).toBe('ERR_LISTEN');
    expect(new UsageError('x').code).toBe('ERR_USAGE');
    expect(new WorkerLostError('x').code).toBe('ERR_WORKER_LOST');
    expect(new WorkerLostError('x')).not.toBeInstanceOf(EdgeError);
  });

  it('are all declared in src/errors.ts', () => {
    const elsewhere = serverSources()
      .filter((file) => !file.endsWith(join('src', 'errors.ts')))
      .flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/class (\w+) extends \w*Error\b/g)].map((m) => `${relative(SRC, file)}: ${m[1]}`));
    expect(elsewhere).toEqual([]);
  });
});

describe('messages about a bad value', () => {
  it('have one shape: <name> must be <rule>, got <value>, ranges min..max, strings quoted and cut', () => {
    expect(mustBe('size', `an integer in ${range(1, 1000)}`, 'abc')).toBe('size must be an integer in 1..1000, got "abc"');
    expect(mustBe('sync', oneOf(['none', 'interval', 'always']), 'x')).toBe('sync must be one of none, interval or always, got "x"');
    expect(describeValue('x'.repeat(60))).toBe(`"${'x'.repeat(48)}..."`);
    expect([undefined, null, [1], { a: 1 }, 5, true].map(describeValue)).toEqual(['nothing', 'null', 'an array', 'an object', '5', 'true']);
  });
});

import { describe, expect, it } from 'vitest';
import { EdgeError, InvalidArgumentError, MethodNotAllowedError, PushPartlyKeptError, StoreReadOnlyError, TooManyRequestsError } from '../src/errors.js';

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
});

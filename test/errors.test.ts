import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, StoreReadOnlyError, EdgeError } from '../src/errors.js';

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
});

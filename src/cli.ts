#!/usr/bin/env node
/**
 * edge-datacenter [serve] [--config FILE]
 * edge-datacenter export --model UUID [--format csv|jsonl|xlsx] [--formulas escape|raw] [--out FILE] [--from ID] [--to ID] [--config FILE]
 * edge-datacenter backup --model UUID [--out FILE] [--config FILE]
 * edge-datacenter restore [--in FILE] [--replace] [--config FILE]
 * edge-datacenter import --model UUID [--format csv|jsonl] [--in FILE] [--config FILE]
 * edge-datacenter config --print-defaults
 * edge-datacenter bench [--seconds N | --quick] [--out DIR] [--dir DIR] [--compare OTHER.json [--in MINE.json]]
 */
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import type { Logger } from 'pino';
import type { LoadedConfig } from './config/index.js';
import { EdgeError, ListenError, UsageError } from './errors.js';
import type { RunningService } from './server.js';

/**
 * V8's optimizing compiler (TurboFan) waits until the service listens (issue 32, memory of an idle
 * gateway). Loading the service's ~230 modules makes a few functions of Node's module loader hot enough
 * to be optimized, and the first optimization pages in about 4 MiB of the `node` binary (the compiler's
 * code) that a gateway with nothing to do never needs again: RSS after start 62 -> 58 MiB. From the
 * moment it listens (or a command other than `serve` starts, or the start fails) V8 optimizes as
 * always, so a gateway with work pays those pages at its first hot function, as before, and its
 * throughput is unchanged. Hence this module imports almost nothing statically: the rest loads with
 * `import()` after the switch (static imports would load before it). Flags given to node about the
 * compiler (`--no-opt`, `--jitless`...) are left alone. The switch is `v8.setFlagsFromString`, which
 * Node documents as "use with care" after start: this flag only decides whether V8 queues an optimizing
 * job, and the functions it skipped are optimized later if they are still hot (measured on Node 20.20;
 * Node builds V8 without freezing its flags, so newer versions take it too). Checked by
 * `test/deploy/startup-tiering.test.ts`: nothing optimized while starting and idle, optimizing after.
 */
const COMPILER_FLAGS = /^--(no-)?(turbofan|opt|jitless|always-turbofan|always-opt)$/;
const deferCompiler = ![...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((flag) => COMPILER_FLAGS.test(flag.split('=')[0]));
if (deferCompiler) setFlagsFromString('--no-turbofan');

/** Lets V8 optimize again; idempotent. */
function resumeCompiler(): void {
  if (!deferCompiler) return;
  setFlagsFromString('--turbofan');
}

const USAGE = `Usage:
  edge-datacenter [serve] [--config FILE]
      Run the service (the default command). Without --config the built-in defaults apply and
      ./data is used; the first start generates the query secret and admin token there.
  edge-datacenter export --model UUID [--format csv|jsonl|xlsx] [--formulas escape|raw] [--out FILE] [--from ID] [--to ID] [--config FILE]
      Write a model's records in id order to FILE (default: standard output), reading the store
      directly. Stop the service first, or use GET /api/v1/datacenter/exportData while it runs
      (export, backup, restore and import say so when the service holds the data directory).
      CSV prefixes ' to STRING values a spreadsheet would run as formulas; --formulas raw keeps them.
  edge-datacenter backup --model UUID [--out FILE] [--config FILE]
      Write a model's backup (NDJSON: its definition, then every record with its id and create_at)
      to FILE (default: standard output). Offline, like export.
  edge-datacenter restore [--in FILE] [--replace] [--config FILE]
      Recreate the model of a backup (default: standard input) with its uuid, ids and create_at,
      published. An existing model is replaced only with --replace. All or nothing; offline.
  edge-datacenter import --model UUID [--format csv|jsonl] [--in FILE] [--config FILE]
      Append the rows of an export file to a model with new ids, keeping create_at. All or nothing; offline.
  edge-datacenter config --print-defaults
      Print the commented default configuration file.
  edge-datacenter bench [--seconds N | --quick] [--out DIR] [--dir DIR] [--compare OTHER.json [--in MINE.json]]
      Measure this device (about N = 120 s; --quick: 20 s) on a service of its own in a temporary
      directory under --dir (default: the system's; give the data disk): records/s and CPU per record
      through RHILEX's sample rule, read latencies, RSS, fdatasync, sync = always. Writes a JSON and a
      Markdown report into --out (default: here); --compare prints ratios against another device's
      report, --in compares MINE.json with it without running.
  edge-datacenter help | --help | --version
`;

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      config: { type: 'string', short: 'c' },
      model: { type: 'string', short: 'm' },
      format: { type: 'string', short: 'f' },
      formulas: { type: 'string' },
      out: { type: 'string', short: 'o' },
      in: { type: 'string', short: 'i' },
      replace: { type: 'boolean' },
      from: { type: 'string' },
      to: { type: 'string' },
      'print-defaults': { type: 'boolean' },
      seconds: { type: 'string' },
      quick: { type: 'boolean' },
      dir: { type: 'string' },
      compare: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
}

type Parsed = ReturnType<typeof parse>;

function idOption(parsed: Parsed, name: 'from' | 'to'): number | undefined {
  const raw = parsed.values[name];
  if (raw === undefined) return undefined;
  if (!/^[0-9]{1,16}$/.test(raw) || !Number.isSafeInteger(Number(raw)) || Number(raw) < 1) {
    throw new UsageError(`--${name} must be a record id (an integer >= 1), got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

function requiredModel(parsed: Parsed, command: string): string {
  const uuid = parsed.values.model;
  if (uuid === undefined || uuid.length === 0) throw new UsageError(`${command} needs --model UUID`);
  return uuid;
}

async function load(file: string | undefined): Promise<{ loaded: LoadedConfig; notes: string[] }> {
  const notes: string[] = [];
  const { loadConfig } = await import('./config/index.js');
  const loaded = await loadConfig({ file, log: (msg) => notes.push(msg) });
  return { loaded, notes };
}

async function serve(parsed: Parsed): Promise<void> {
  // Signal handlers first: a SIGTERM that arrives while the service starts (or right after the
  // address is printed) must still end in a clean shutdown, never in the default kill.
  let service: RunningService | undefined;
  let stopRequested: string | undefined;
  let stopping = false;
  let logger: Logger | undefined;
  const shutdown = (signal: string): void => {
    if (service === undefined) {
      stopRequested = signal;
      return;
    }
    if (stopping) {
      logger?.warn({ signal }, 'second signal: exiting without a clean shutdown');
      process.exit(1);
    }
    stopping = true;
    logger?.info({ signal }, 'stopping: flushing and closing the store');
    service.stop().then(
      () => {
        logger?.info('stopped cleanly');
        logger?.flush();
        process.exit(0);
      },
      (err: unknown) => {
        logger?.error({ err }, 'shutdown failed');
        logger?.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  const { loaded, notes } = await load(parsed.values.config);
  const { config } = loaded;
  const { pino } = await import('pino');
  logger = pino({ level: config.main.logLevel, base: { service: 'edge-datacenter' }, timestamp: pino.stdTimeFunctions.isoTime });
  for (const warning of loaded.warnings) logger.warn(warning);
  if (loaded.firstStart) {
    const note = notes.find((n) => n.startsWith('generated')) ?? 'generated credentials';
    process.stdout.write(`First start: ${note}. Read them there; they are not printed again.\n`);
    logger.info({ dataDir: config.main.dataDir }, note);
  }
  const [{ startService }, { hostPort }] = await Promise.all([import('./server.js'), import('./http/transport/transport-contract.js')]);
  service = await startService(config, logger);
  resumeCompiler();
  process.stdout.write(`edge-datacenter listening on ${service.scheme}://${hostPort(config.http.host, service.port)}\n`);
  logger.info({ host: service.host, port: service.port, scheme: service.scheme, transport: service.transport }, 'listening');
  if (stopRequested !== undefined) shutdown(stopRequested);
}

/** The offline commands (and cli-progress) load only when one runs: `serve` never needs them. */
const offline = (): Promise<typeof import('./cli-transfers.js')> => import('./cli-transfers.js');

async function exportCommand(parsed: Parsed): Promise<void> {
  const [{ exportCommand: run }, { exportFormat, formulaMode }] = await Promise.all([offline(), import('./http/export/export.js')]);
  const uuid = requiredModel(parsed, 'export');
  const options = {
    format: exportFormat(parsed.values.format),
    formulas: formulaMode(parsed.values.formulas),
    fromId: idOption(parsed, 'from'),
    toId: idOption(parsed, 'to'),
  };
  // As the HTTP export answers 400 (parameter 'from' must be at most 'to').
  if (options.fromId !== undefined && options.toId !== undefined && options.fromId > options.toId) {
    throw new UsageError(`--from must be at most --to (${options.toId}), got ${options.fromId}`);
  }
  await run((await load(parsed.values.config)).loaded.config, uuid, options, parsed.values.out);
}

async function main(argv: string[]): Promise<number> {
  let parsed: Parsed;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help || (parsed.positionals[0] === 'help' && parsed.positionals.length === 1)) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.values.version) {
    const { SERVICE_VERSION } = await import('./http/server.js');
    process.stdout.write(`edge-datacenter ${SERVICE_VERSION}\n`);
    return 0;
  }
  const [command = 'serve', ...rest] = parsed.positionals;
  if (command !== 'serve') resumeCompiler();
  try {
    if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
    switch (command) {
      case 'serve':
        try {
          await serve(parsed);
        } finally {
          resumeCompiler();
        }
        return -1; // keeps running; the signal handlers exit
      case 'export':
        await exportCommand(parsed);
        return 0;
      case 'backup':
        await (await offline()).backupCommand((await load(parsed.values.config)).loaded.config, requiredModel(parsed, 'backup'), parsed.values.out);
        return 0;
      case 'restore':
        await (await offline()).restoreCommand((await load(parsed.values.config)).loaded.config, parsed.values.in, parsed.values.replace === true);
        return 0;
      case 'import':
        await (await offline()).importCommand((await load(parsed.values.config)).loaded.config, requiredModel(parsed, 'import'), parsed.values.format, parsed.values.in);
        return 0;
      case 'bench': {
        // Loaded only for this command, as the offline ones are.
        const { benchCommand } = await import('./bench/command.js');
        const { seconds, quick, out, dir, compare } = parsed.values;
        return await benchCommand({ seconds, quick, out, dir, compare, in: parsed.values.in });
      }
      case 'config':
        if (!parsed.values['print-defaults']) throw new UsageError('config needs --print-defaults');
        process.stdout.write((await import('./config/index.js')).defaultConfigText());
        return 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}`);
      return 2;
    }
    if (err instanceof EdgeError || err instanceof ListenError) {
      process.stderr.write(`edge-datacenter: ${err.message}\n`);
      return 1;
    }
    process.stderr.write(`edge-datacenter: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`);
    return 1;
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;

// Types of service.mjs (plain JS so the crash harness runs under node without a compile step).
import type { ChildProcess } from 'node:child_process';

export declare const repoRoot: string;
export declare const cliPath: string;
export declare const SECRET: string;
export declare const ADMIN: string;
export declare const ATTRS: string[];

export interface ConfigOptions {
  dataDir?: string;
  logLevel?: string;
  store?: Record<string, string | number>;
  scripts?: Record<string, string | number>;
}
export declare function writeConfig(dir: string, opts?: ConfigOptions): { file: string; dataDir: string };
export declare function configIn(parent: string, name: string, opts?: ConfigOptions): { dir: string; file: string; dataDir: string };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}
export interface ServiceChild {
  child: ChildProcess;
  base: string;
  /** The child's last output lines (pino JSON on stdout, stderr prefixed). */
  log: string[];
  exited: Promise<Exit>;
  kill(signal?: NodeJS.Signals): Promise<Exit>;
}
/** Runs `serve` expecting it to fail (killed after 15 s otherwise); its exit code, stderr and run time. */
export declare function serveExpectingExit(configFile: string): Promise<{ code: number | null; stderr: string; ms: number }>;

export declare function startService(
  configFile: string,
  opts?: {
    env?: Record<string, string>;
    startTimeoutMs?: number;
    /** A command the service runs under (e.g. fiu-run -x ...), which must exec it in place. */
    wrap?: string[];
    /** Runs the service under `prlimit --nofile=<fdLimit>`: its open-file limit. */
    fdLimit?: number;
    /** Node's own flags (`--trace-opt`, `--import` a hook), given before the CLI. */
    nodeArgs?: string[];
    /** Called with every line the service prints on stdout, from its start to its exit (`log` keeps only the last 200). */
    onLine?: (line: string) => void;
  },
): Promise<ServiceChild>;

export interface Answer {
  status: number;
  headers?: Headers;
  body: any;
  text: string;
  error?: string;
}
export declare function call(
  base: string,
  urlPath: string,
  init?: { method?: string; body?: unknown; token?: string | null; headers?: Record<string, string>; signal?: AbortSignal },
): Promise<Answer>;

export interface Pipeline {
  model: string;
  inend: string;
  token: string;
  rule: string;
}
export declare function setupPipeline(base: string, name?: string): Promise<Pipeline>;
export declare function payload(seq: number, pushNo: number, index: number, round: number): string;
export declare function pushNdjson(base: string, pipeline: Pipeline, lines: string[], signal?: AbortSignal): Promise<Answer>;

export interface StoredRecord {
  id: number;
  create_at: string;
  temp: number;
  resistivity: number;
  conductivity: number;
  dissolved_oxygen: number;
  ph_value: number;
}
export declare function readAll(base: string, model: string): Promise<{ records: StoredRecord[]; total: number; settled: boolean }>;
export declare function readSettled(base: string, model: string, tries?: number): Promise<{ records: StoredRecord[]; total: number; settled: boolean }>;
export declare function lastData(base: string, model: string): Promise<Record<string, unknown>>;

export interface Push {
  seqs: number[];
  acked: boolean;
  /** Set by startPushers when the push got no 200: the connection error code, or `HTTP <status>`. */
  error?: string;
}
export interface StoreCheck {
  problems: string[];
  records: number;
  ackedPushes: number;
  ackedRecords: number;
  unackedStored: number;
}
export declare function checkStore(
  read: { records: StoredRecord[]; total: number },
  last: Record<string, unknown> | undefined,
  pushes: Map<number, Push>,
  lostRanges?: LostRange[],
): StoreCheck;
export interface LostRange {
  fromId: number;
  toId: number;
}
export declare function lostRanges(base: string, model: string): Promise<LostRange[]>;

export declare function prng(seed: number): () => number;
export declare function sleep(ms: number): Promise<void>;

export interface PushState {
  nextSeq: number;
  nextPush: number;
  pushes: Map<number, Push>;
  answers: { ok: number; network: number; other: number };
  anomalies: string[];
}
export declare function newPushState(): PushState;
export declare function startPushers(
  base: string,
  pipeline: Pipeline,
  state: PushState,
  opts?: { concurrency?: number; maxLines?: number; round?: number; rand?: () => number; maxPushes?: number; onStatus?: (a: Answer) => 'stop' | void },
): { done: Promise<void[]>; stop(): Promise<void[]> };

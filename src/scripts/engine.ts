/**
 * The rule runtime's front door: rules and inputs (CRUD, persisted), push authentication, pushes,
 * simulators, stats. Lua runs in the worker pool; this thread only queues, batches and appends.
 */
import type { Config } from '../config/types.js';
import { InvalidArgumentError, NotFoundError, StateError, UnavailableError } from '../errors.js';
import type { TaskContext } from './batch-run.js';
import { InputDispatcher, type PushOptions } from './dispatcher.js';
import { DryRunner, type DryRunResult } from './dry-run.js';
import { InendBook, parseSimulatorConfig } from './inends.js';
import { isPushPayloads, type PushPayloads } from './payloads.js';
import { InputCounters } from './input-stats.js';
import { withoutSecrets } from './input-configs.js';
import { NetworkInputs, type NetworkInputView } from '../inputs/index.js';
import { ScriptPool } from './pool/pool.js';
import { parseRuleFields, RuleBook, type RuleFields } from './rules.js';
import { Simulator } from './simulator.js';
import { RuleStatsBook } from './shared/stats.js';
import { optionalText, requireBody } from './metadata-file.js';
import { mkdirDurable } from '../util/atomic-file.js';
import { named } from '../util/messages.js';
import { toLogFn, type Inend, type LevelLogger, type LogFn, type ModelSource, type InputStatsView, type InputTlsFiles, type PushResult, type Rule, type RuleStats, type ValidationResult } from './shared/types.js';

export interface ScriptEngineOptions {
  dataDir: string;
  config: Config['scripts'];
  registry: ModelSource;
  log?: LogFn | LevelLogger;
  /** Compiled worker module; see ScriptPool. */
  workerFile?: string;
  /** A login the built-in MQTT broker of an input refused (wrong or missing password): for the audit log. */
  onBrokerAuthFailed?: (event: { address: string; inendUuid: string; username: string }) => void;
  /** The HTTP server's certificate and key, checked (src/http/transport/tls.ts): the MQTT brokers with config.tls use them. */
  inputTls?: InputTlsFiles;
}

export class ScriptEngine {
  private readonly dispatchers = new Map<string, InputDispatcher>();
  private readonly simulators = new Map<string, Simulator>();
  private readonly stats = new RuleStatsBook();
  private modelsVersion = 0;
  private unsubscribe: () => void;
  private closed = false;
  private readonly log: LogFn | undefined;
  private readonly dryRunner: DryRunner;
  /** The running parts of the UDP and MQTT inputs (src/inputs/). */
  private readonly network: NetworkInputs;

  private constructor(
    private readonly opts: ScriptEngineOptions,
    private readonly pool: ScriptPool,
    private readonly rules: RuleBook,
    private readonly inends: InendBook,
  ) {
    this.unsubscribe = opts.registry.onChange(() => this.modelsVersion++);
    this.log = toLogFn(opts.log);
    this.dryRunner = new DryRunner({ pool, queueMax: opts.config.queueMax, taskContext: () => this.taskContext() });
    this.network = new NetworkInputs({
      sinkFor: (uuid) => (payloads, options) => this.push(uuid, payloads, options),
      authFor: (uuid) => ({
        checkPassword: (password) => {
          try {
            this.inends.authenticate(uuid, password);
            return true;
          } catch {
            return false;
          }
        },
        failed: (address, username) => opts.onBrokerAuthFailed?.({ address, inendUuid: uuid, username }),
      }),
      log: this.log,
      tls: opts.inputTls,
    });
  }

  static async open(opts: ScriptEngineOptions): Promise<ScriptEngine> {
    await mkdirDurable(opts.dataDir);
    const [rules, inends] = await Promise.all([RuleBook.open(opts.dataDir), InendBook.open(opts.dataDir)]);
    const { workers, workerIdleS, timeoutMs, hardTimeoutMs, memoryMb } = opts.config;
    const pool = new ScriptPool({ workers, timeoutMs, hardTimeoutMs, memoryMb, idleStopMs: workerIdleS * 1000, workerFile: opts.workerFile });
    const engine = new ScriptEngine(opts, pool, rules, inends);
    // Network inputs start in the background: the HTTP API does not wait for a broker.
    for (const inend of inends.list()) void engine.startInput(inend);
    return engine;
  }

  // ---- rules ----

  listRules(): Rule[] {
    return this.rules.list();
  }

  getRule(uuid: string): Rule {
    return this.rules.get(uuid);
  }

  createRule(input: unknown): Promise<Rule> {
    return this.rules.create(async () => this.compiledFields(parseRuleFields(input, (id) => this.inends.has(id))));
  }

  /** The replaced rule takes over from the next batch; payloads already queued are kept. */
  updateRule(input: unknown): Promise<Rule> {
    return this.rules.update(requireBody(input).uuid, async (current) =>
      this.compiledFields(parseRuleFields(input, (id) => this.inends.has(id), current)),
    );
  }

  async deleteRule(uuid: string): Promise<void> {
    await this.rules.delete(uuid);
    this.stats.forget(uuid);
  }

  /** Compiles `{actions, success, failed}` (or a bare actions script) without saving anything. */
  validate(input: unknown): Promise<ValidationResult> {
    const body: Record<string, unknown> = typeof input === 'string' ? { actions: input } : requireBody(input);
    const text = (field: string): string => optionalText(body[field], field, Infinity);
    return this.pool.compile({ kind: 'compile', actions: text('actions'), success: text('success'), failed: text('failed') });
  }

  /** Runs scripts on a payload as a rule would and answers the records instead of storing them (dry-run.ts). */
  dryRun(input: unknown): Promise<DryRunResult> {
    if (this.closed) throw new UnavailableError('the service is shutting down: try again once it is back', 5);
    return this.dryRunner.run(input);
  }

  ruleStats(uuid: string): RuleStats {
    this.rules.get(uuid);
    return this.stats.get(uuid);
  }

  // ---- inputs ----

  // What these answer goes to API clients: a GENERIC_MQTT password is masked (withoutSecrets).

  listInends(): Inend[] {
    return this.inends.list().map(withoutSecrets);
  }

  getInend(uuid: string): Inend {
    return withoutSecrets(this.inends.get(uuid));
  }

  async createInend(input: unknown): Promise<{ inend: Inend; token?: string }> {
    const created = await this.inends.create(input);
    // Answered once a network input listens or connects (or shows why not): inends/stats has its connection then.
    await this.startInput(created.inend);
    return { ...created, inend: withoutSecrets(created.inend) };
  }

  /** A simulator or a network input restarts with its new settings; the queue of the input is kept. */
  async updateInend(input: unknown): Promise<Inend> {
    const inend = await this.inends.update(input);
    this.stopSimulator(inend.uuid);
    this.startSimulator(inend);
    await this.network.restart(inend);
    return withoutSecrets(inend);
  }

  /** A new push token for an HTTP input; the old one is refused from now on. */
  rotateToken(uuid: unknown): Promise<{ inend: Inend; token: string }> {
    return this.inends.rotateToken(uuid);
  }

  /** Refused while a rule reads the input; waits for its queued payloads to finish. */
  async deleteInend(uuid: string): Promise<void> {
    await this.inends.delete(uuid, (id) => {
      const readers = this.rules.readers(id);
      if (readers.length > 0) {
        const input = named(this.inends.nameOf(id), id);
        const list = readers.map((r) => named(r.name, r.uuid)).join(', ');
        throw new StateError(
          `input ${input} is read by ${readers.length === 1 ? 'rule' : 'rules'} ${list}: the input is not deleted; ` +
            'remove it from the fromSource of each rule (or delete the rules) first',
        );
      }
    });
    this.stopSimulator(uuid);
    await this.network.stop(uuid);
    await this.dispatchers.get(uuid)?.idle();
    this.dispatchers.delete(uuid);
  }

  authenticatePush(inendUuid: string, token: string): void {
    this.inends.authenticate(inendUuid, token);
  }

  /**
   * Queues the payloads (all or none: a full queue throws UnavailableError) and resolves once each
   * has run through every rule reading the input and its records are stored.
   */
  push(inendUuid: string, payloads: PushPayloads, options: PushOptions = {}): Promise<PushResult> {
    if (this.closed) throw new UnavailableError('the service is shutting down: push again once it is back', 5);
    const dispatcher = this.dispatchers.get(inendUuid);
    if (!dispatcher) throw new NotFoundError(`input ${inendUuid} not found`);
    if (!isPushPayloads(payloads)) {
      throw new InvalidArgumentError('payloads must be an array of strings, or the lines of a push body');
    }
    return dispatcher.push(payloads, options);
  }

  /** Tasks that ran past the soft limit without the instruction hook and ran again with it, since the start. */
  ruleOverruns(): number {
    return this.pool.overruns;
  }

  /** Why rules fail for reasons of ours, not of the scripts (worker faults in the last minute). */
  faults(): string[] {
    const recent = this.pool.recentFaults();
    return recent.length === 0 ? [] : [`rules failed for a worker fault ${recent.length} times in the last minute: ${recent[recent.length - 1]}`];
  }

  /**
   * The input's health since the start: last payload, counts, queue depth, last failure; for a network
   * input also its connection and message counters (docs/api.md).
   */
  inendStats(uuid: string): InputStatsView {
    const inend = this.inends.get(uuid);
    const dispatcher = this.dispatchers.get(inend.uuid);
    const stats = dispatcher ? dispatcher.counters.view(inend.uuid, dispatcher.queued) : new InputCounters().view(inend.uuid, 0);
    const network = this.network.stats(inend.uuid);
    return network === undefined ? stats : { ...stats, ...network };
  }

  /** Every running network input with its connection and counters (for /healthz and /metrics). */
  networkInputs(): NetworkInputView[] {
    return this.network.list();
  }

  /** Payloads waiting per input (for metrics). */
  queueDepth(inendUuid: string): number {
    return this.dispatchers.get(inendUuid)?.queued ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // First: no new message is taken, and messages not yet stored stay unacknowledged (their senders resend them).
    await this.network.stopAll();
    for (const simulator of this.simulators.values()) simulator.stop();
    this.simulators.clear();
    await Promise.all([...this.dispatchers.values()].map((d) => d.idle()));
    this.unsubscribe();
    await this.pool.close();
  }

  // ---- internals ----

  private async compiledFields(fields: RuleFields): Promise<RuleFields> {
    const result = await this.pool.compile({ kind: 'compile', actions: fields.actions, success: fields.success, failed: fields.failed });
    if (!result.ok) throw new InvalidArgumentError(result.error ?? 'script does not compile');
    return fields;
  }

  private startInput(inend: Inend): Promise<void> {
    this.dispatchers.set(
      inend.uuid,
      new InputDispatcher({
        inendUuid: inend.uuid,
        queueMax: this.opts.config.queueMax,
        pool: this.pool,
        models: this.opts.registry,
        stats: this.stats,
        rulesFor: (id) => this.rules.scriptsFor(id),
        ruleName: (id) => this.rules.nameOf(id),
        inendName: (id) => this.inends.nameOf(id),
        taskContext: () => this.taskContext(),
        log: this.log,
      }),
    );
    this.startSimulator(inend);
    // A failure to listen or connect shows in inends/stats and the log, never as an error here.
    return this.network.restart(inend).catch(() => undefined);
  }

  private startSimulator(inend: Inend): void {
    if (inend.type !== 'SIMULATOR') return;
    const dispatcher = this.dispatchers.get(inend.uuid)!;
    const simulator = new Simulator(parseSimulatorConfig(inend.config), (payloads) => dispatcher.offer(payloads));
    this.simulators.set(inend.uuid, simulator);
    simulator.start();
  }

  private stopSimulator(uuid: string): void {
    this.simulators.get(uuid)?.stop();
    this.simulators.delete(uuid);
  }

  /**
   * Model definitions travel with every task (a structured clone of plain data, small next to a
   * batch of payloads); the version lets each worker skip re-indexing them when nothing changed.
   */
  private taskContext(): TaskContext {
    const models = this.opts.registry.list();
    const readOnlyModels: string[] = [];
    for (const model of models) {
      if (!model.published) continue;
      try {
        if (this.opts.registry.log(model.uuid).state === 'read-only') readOnlyModels.push(model.uuid);
      } catch {
        // A model unpublished since list(): the worker reports it as not published.
      }
    }
    return {
      modelsVersion: this.modelsVersion,
      models,
      readOnlyModels,
      rulesEpoch: this.rules.epoch,
      liveRuleIds: this.rules.ids(),
    };
  }
}

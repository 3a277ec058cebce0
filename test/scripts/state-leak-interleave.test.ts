/**
 * Security finding 3 under seeded interleavings: hostile payloads on one input (nesting 300,000 deep,
 * megabyte strings, loops that hit the time limit, allocations that hit the memory limit) while other
 * inputs take pushes, one of their rules is updated, scripts are validated and dry-run. Whatever X's
 * payloads did to the worker they ran on, nothing else's answer changes: every push of Y and Z is
 * accepted with its records, every update compiles, every validate and dry run answers as it always does,
 * and no worker fails. Real engine and worker threads; fast-check's scheduler picks which actor's next
 * step starts, and whether the actor waits for it before the next one.
 *
 * `npm test` runs LEAK_RUNS (default 6) schedules from LEAK_SEED; a failure prints the seed and path to
 * replay (`LEAK_SEED=… LEAK_RUNS=… npx vitest run test/scripts/state-leak-interleave.test.ts`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openHarness, type Harness } from './helpers.js';

const seed = Number(process.env.LEAK_SEED ?? 20260311);
const runs = Number(process.env.LEAK_RUNS ?? 6);

const DEPTH = 300_000;
const HOSTILE = {
  deepObject: `${'{"a":'.repeat(DEPTH)}1${'}'.repeat(DEPTH)}`,
  deepArray: `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`,
  hugeString: JSON.stringify({ s: 'h'.repeat(3_000_000) }),
  manyTables: `[${'{},'.repeat(400_000)}{}]`,
  spin: '{"spin":true}',
  catchForever: '{"catchForever":true}',
  tables: '{"tables":true}',
  grow: '{"grow":true}',
};
type Hostile = keyof typeof HOSTILE;

/** A rule any payload can drive into every limit. */
const VULNERABLE = `Actions = { function(args)
  local t = json:J2T(args)
  if type(t) ~= 'table' then return true, args end
  if t.spin then while true do end end
  if t.catchForever then while true do pcall(error, 'caught') end end
  if t.tables then local all = {} for i = 1, math.huge do all[i] = { i } end end
  if t.grow then local s = 'g' while true do s = s .. s end end
  if t.s then local d = t.s .. t.s .. t.s .. t.s end
  return true, args
end }`;

/** Stores `v` tagged `tag`; `version` only changes the text, so each update is compiled anew. */
function storing(model: string, tag: string, version = 0): string {
  return `-- version ${version}
Actions = { function(args)
  local t = json:J2T(args)
  local err = rds:Save("${model}", { v = t.v, tag = "${tag}" })
  if err then Throw(err) end
  return true, args
end }`;
}

/** More than 64 KiB: Lua allocates it in one block, which an expired clock used to refuse. */
const PAD = 'p'.repeat(100 * 1024);
const VALIDATES = {
  ok: { script: 'Actions = { function(a) return true, a end }', answer: { ok: true } },
  large: { script: `Actions = { function(a) return true, a end }\n--${PAD}`, answer: { ok: true } },
  syntax: { script: 'Actions = { function(a) return true, a end', answer: { ok: false, error: "actions: line 1: '}' expected near <eof>", line: 1 } },
};

type Step =
  | { k: 'hostile'; payloads: Hostile[]; wait: boolean }
  | { k: 'push'; large: boolean[]; wait: boolean }
  | { k: 'update'; wait: boolean }
  | { k: 'validate'; what: keyof typeof VALIDATES; wait: boolean }
  | { k: 'dryRun'; large: boolean; wait: boolean };

const wait = fc.boolean();
const hostileArb = fc.record({ k: fc.constant('hostile' as const), payloads: fc.array(fc.constantFrom(...(Object.keys(HOSTILE) as Hostile[])), { minLength: 1, maxLength: 2 }), wait });
const pushArb = fc.record({ k: fc.constant('push' as const), large: fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }), wait });
const planArb = fc.record({
  workers: fc.constantFrom(1, 2),
  x: fc.array(hostileArb, { minLength: 2, maxLength: 4 }),
  y: fc.array(fc.oneof(pushArb, fc.record({ k: fc.constant('update' as const), wait })), { minLength: 2, maxLength: 5 }),
  z: fc.array(pushArb, { maxLength: 2 }),
  v: fc.array(fc.record({ k: fc.constant('validate' as const), what: fc.constantFrom('ok' as const, 'large' as const, 'syntax' as const), wait }), { maxLength: 3 }),
  d: fc.array(fc.record({ k: fc.constant('dryRun' as const), large: fc.boolean(), wait }), { maxLength: 2 }),
});
type Plan = typeof planArb extends fc.Arbitrary<infer P> ? P : never;

/** One schedule: the inputs, the actors' steps, and what the others must have answered. */
class Run {
  private model = '';
  private readonly inputs = new Map<'x' | 'y' | 'z', string>();
  private yRule = '';
  private yVersion = 0;
  private nextValue = 0;
  /** The `v` of every payload Y and Z pushed, by tag. */
  private readonly pushed = { y: [] as number[], z: [] as number[] };
  private readonly failures: unknown[] = [];

  constructor(
    private readonly h: Harness,
    private readonly s: fc.Scheduler,
  ) {}

  async setUp(): Promise<void> {
    this.model = await this.h.model([{ name: 'v', type: 'INTEGER' }, { name: 'tag', type: 'STRING' }]);
    for (const [name, actions] of [['x', VULNERABLE], ['y', storing(this.model, 'y')], ['z', storing(this.model, 'z')]] as const) {
      const { inend } = await this.h.engine.createInend({ name, type: 'HTTP' });
      const rule = await this.h.engine.createRule({ name, fromSource: [inend.uuid], actions });
      this.inputs.set(name, inend.uuid);
      if (name === 'y') this.yRule = rule.uuid;
    }
  }

  async play(plan: Plan): Promise<void> {
    const actors = (['x', 'y', 'z', 'v', 'd'] as const).map((name) => this.actor(name, plan[name]));
    await this.s.waitFor(Promise.all(actors));
    if (this.failures.length > 0) throw this.failures[0];
  }

  async check(): Promise<void> {
    const records = await this.h.records(this.model);
    for (const tag of ['y', 'z'] as const) {
      const values = records.filter((r) => r.tag === tag).map((r) => r.v as number);
      expect(values.sort((a, b) => a - b), `records of ${tag}`).toEqual([...this.pushed[tag]].sort((a, b) => a - b));
    }
    expect(this.h.engine.faults(), 'no worker failed').toEqual([]);
  }

  /** Each step starts when the scheduler picks it; a step that does not wait runs beside the next ones. */
  private async actor(name: string, steps: readonly Step[]): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const [i, step] of steps.entries()) {
      await this.s.schedule(Promise.resolve(), `${name}${i} ${JSON.stringify(step)}`);
      const done = this.perform(name, step).catch((e: unknown) => void this.failures.push(e));
      if (step.wait) await done;
      else pending.push(done);
    }
    await Promise.all(pending);
  }

  private async perform(actor: string, step: Step): Promise<void> {
    switch (step.k) {
      case 'hostile':
        return this.hostile(step.payloads);
      case 'push':
        return this.push(actor === 'y' ? 'y' : 'z', step.large);
      case 'update':
        await this.h.engine.updateRule({ uuid: this.yRule, actions: storing(this.model, 'y', ++this.yVersion) });
        return;
      case 'validate': {
        const { script, answer } = VALIDATES[step.what];
        expect(await this.h.engine.validate({ actions: script }), `validate ${step.what}`).toEqual(answer);
        return;
      }
      case 'dryRun':
        return this.dryRun(step.large);
    }
  }

  /** Each payload fails, at one limit or another; what it leaves in the worker is what the others check. */
  private async hostile(payloads: Hostile[]): Promise<void> {
    const answer = await this.h.engine.push(this.inputs.get('x')!, payloads.map((p) => HOSTILE[p]));
    expect(answer.failed, `hostile ${payloads.join(', ')}: ${JSON.stringify(answer.errors)}`).toBe(payloads.length);
  }

  private payload(large: boolean): { v: number; text: string } {
    const v = ++this.nextValue;
    return { v, text: JSON.stringify(large ? { v, pad: PAD } : { v }) };
  }

  private async push(tag: 'y' | 'z', large: boolean[]): Promise<void> {
    const payloads = large.map((l) => this.payload(l));
    const answer = await this.h.engine.push(this.inputs.get(tag)!, payloads.map((p) => p.text));
    expect(answer.errors, `push to ${tag}`).toEqual([]);
    expect(answer.accepted, `push to ${tag}`).toBe(payloads.length);
    this.pushed[tag].push(...payloads.map((p) => p.v));
  }

  private async dryRun(large: boolean): Promise<void> {
    const { v, text } = this.payload(large);
    const answer = await this.h.engine.dryRun({ actions: storing(this.model, 'dry', v), payload: text });
    expect(answer.errors, 'dry run').toEqual([]);
    expect(answer.records.map((r) => r.record), 'dry run').toEqual([expect.objectContaining({ v, tag: 'dry' })]);
  }
}

describe('worker state under hostile payloads, seeded interleavings', () => {
  it(`${runs} schedules from seed ${seed}: the other inputs' answers never change`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), planArb, async (s, plan) => {
        const h = await openHarness({ workers: plan.workers });
        try {
          const run = new Run(h, s);
          await run.setUp();
          await run.play(plan);
          await run.check();
        } finally {
          await h.close();
        }
      }),
      // Each schedule takes seconds of real worker time: report the first failure as it is, unshrunk.
      { seed, numRuns: runs, endOnFailure: true },
    );
  }, 60_000 + runs * 30_000);
});

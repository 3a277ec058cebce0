/**
 * One wasmoon Lua state per worker, locked down: only the base, table, string, math and coroutine
 * libraries (no io, os, debug, package), text-only `load`, a per-invocation soft time limit from an
 * instruction-count hook, and a memory cap on the Lua allocator.
 *
 * The time limit is sticky: once the clock has passed the deadline, the invocation is over whatever
 * the script does. The hook raises at every count until the call unwinds, every pcall / xpcall /
 * coroutine.resume / coroutine.close that catches anything raises the time-limit error again (asking
 * `__time_up`, not looking at the error, which a `<close>` handler or an xpcall handler may have
 * replaced), the allocator refuses large allocations, and the invocation is answered as timed out.
 * Sticky within the invocation only: compiles and tasks all enter Lua through `protectedCall`, which
 * starts a fresh clock and leaves none behind, and `step` starts a fresh one for each invocation of a
 * task, so nothing one invocation ran into reaches the next.
 *
 * Rules are compiled once into environments kept in the Lua registry, and JS calls them through raw
 * stack operations: wasmoon 1.16 corrupts memory after repeated `doString` calls that return values
 * (ceifa/wasmoon#109, fixed only on git main), and the raw calls are also the cheapest way in.
 */
import { LuaFactory, LUA_REGISTRYINDEX, LuaLibraries, type LuaEngine, type LuaWasm } from 'wasmoon';
import { hexCFunctions } from './hex-lib.js';
import { WasmJ2t } from './j2t-wasm.js';
import { LuaBridge } from './lua-bridge.js';
import { PayloadWindow } from './payload-window.js';
import { hostFunctions, INVOKE_ERROR, INVOKE_TIMEOUT, PRELUDE_LUA, type LibHost } from './lua-libs.js';
import { cappedAllocator, type LuaAllocator } from './wasm-allocator.js';
import { captureWasmExports, LUA_TFUNCTION, LUA_TSTRING, LUA_TTABLE, rawLua, WasmStrings, type RawLua } from './lua-raw.js';
import { capMessage, MESSAGE_BYTES_MAX } from '../shared/repeat-filter.js';
import { taskPayloads, type TaskPayloads } from '../shared/protocol.js';

export interface SandboxLimits {
  timeoutMs: number;
  memoryMb: number;
}

export interface InvokeOutcome {
  status: number;
  message?: string;
}

/**
 * What a task's invocations report to, in their order: every rule on payload 0, then on payload 1, and
 * so on. `ended` follows each `starting`; a rule without an environment (it did not compile) is `skipped`.
 */
export interface InvocationVisitor {
  starting(payload: number, rule: number): void;
  /**
   * `status`: INVOKE_*, with the message `invoke` answered (no object an invocation: this runs for every
   * payload); `atMs`: performance.now() when it ended, which is also when the next one's clock started.
   */
  ended(payload: number, rule: number, status: number, message: string | undefined, atMs: number): void;
  skipped(payload: number, rule: number): void;
}

/** Where a task's Lua loop stands (see invokeAll). */
interface TaskCursor {
  readonly envRefs: readonly (number | undefined)[];
  readonly payloads: TaskPayloads;
  readonly visitor: InvocationVisitor;
  payload: number;
  rule: number;
  /** An invocation was handed to Lua and has not ended. */
  active: boolean;
  done: boolean;
  /** Invocations run without the instruction hook (invokeAll). */
  readonly unhooked: boolean;
  /** An unhooked invocation ended past its deadline: the task stopped there. */
  overran: boolean;
  /** The payload whose string the loop holds as `args` (-1: none, push it with the next invocation). */
  pushed: number;
}

/** Lua checks the clock every this many VM instructions; ~0.1 ms of Lua at wasmoon's speed. */
const HOOK_INSTRUCTION_COUNT = 2000;
const LUA_MASK_COUNT = 8;
const MEMORY_ERROR = 'not enough memory';
/**
 * Bytes of a Lua error message decoded at most: a longer one is cut without reading the rest, and
 * says how many bytes it left out, those never read included.
 */
const MESSAGE_HEAD_BYTES = 16 * MESSAGE_BYTES_MAX;

/**
 * The deadline of the running protected call, and whether it has passed (which stays so until the call
 * ends). On performance.now(): the task loop reads the clock once between two invocations, for the
 * last one's duration and the next one's deadline.
 */
class InvocationClock {
  private deadline = Infinity;
  expired = false;

  start(timeoutMs: number, nowMs = performance.now()): void {
    this.deadline = nowMs + timeoutMs;
    this.expired = false;
  }

  /**
   * Outside protected calls nothing is ever late: an expiry left over would make the hook raise in the
   * next call before its own clock started, and the allocator refuse the next payload (a Lua panic).
   */
  stop(): void {
    this.deadline = Infinity;
    this.expired = false;
  }

  timeUp(): boolean {
    if (!this.expired && performance.now() > this.deadline) this.expired = true;
    return this.expired;
  }

  /** The deadline passed before `nowMs`, whether or not anything asked the clock in time. */
  passedBy(nowMs: number): boolean {
    return this.expired || nowMs > this.deadline;
  }
}

export type ScriptName = 'actions' | 'success' | 'failed';

/**
 * The three scripts of a rule, compiled into one environment held by a registry reference. A
 * `transient` failure ran into the time or memory limit: it depends on how busy the machine is and
 * what else the Lua heap holds, so the same scripts may compile next time.
 */
export type CompileOutcome = { ok: true; envRef: number } | { ok: false; error: string; transient?: true };

/**
 * How a protected call ended: Lua's status, whether it ran out of time or was refused memory, and
 * whether it ended past its deadline (`late`: the hook, had it been on, might have ended it sooner).
 */
interface CallEnd {
  rc: number;
  timedOut: boolean;
  refused: boolean;
  late: boolean;
}

const SCRIPT_NAMES: readonly ScriptName[] = ['actions', 'success', 'failed'];

/** Raised by the instruction hook and recognised by the prelude, which rethrows it past pcall. */
function timeoutMessage(limits: SandboxLimits): string {
  return `time limit exceeded (${limits.timeoutMs} ms)`;
}

export class LuaSandbox {
  private readonly state: number;
  /** Whether the main state's instruction hook is set (setHook). */
  private hookOn = true;
  private readonly compileRef: bigint;
  private readonly invokeTaskRef: bigint;
  /** The last environment invoked, as the BigInt lua_rawgeti takes: a task invokes one rule many times. */
  private envRef = -1;
  private envRefBig = -1n;
  /** The task invokeAll runs, which the loop's `step` calls walk through. */
  private task: TaskCursor | undefined;

  private constructor(
    private readonly engine: LuaEngine,
    private readonly lua: LuaWasm,
    private readonly raw: RawLua,
    private readonly strings: WasmStrings,
    private readonly window: PayloadWindow,
    private readonly allocator: LuaAllocator,
    private readonly bridge: LuaBridge,
    private readonly limits: SandboxLimits,
    private readonly clock: InvocationClock,
    private readonly hookPointer: number,
    refs: { compile: number; invokeTask: number },
  ) {
    const state = engine.global.address;
    this.state = state;
    this.compileRef = BigInt(refs.compile);
    this.invokeTaskRef = BigInt(refs.invokeTask);
    lua.lua_sethook(state, hookPointer, LUA_MASK_COUNT, HOOK_INSTRUCTION_COUNT);
  }

  get memoryMessage(): string {
    return `memory limit exceeded (${this.limits.memoryMb} MB)`;
  }

  static async create(limits: SandboxLimits, host: LibHost): Promise<LuaSandbox> {
    const { value: engine, exports } = await captureWasmExports(() =>
      new LuaFactory().createEngine({ openStandardLibs: false, traceAllocations: true, enableProxy: false }),
    );
    const g = engine.global;
    const lua = g.lua;
    const state = g.address;
    const raw = rawLua(lua, exports);
    const clock = new InvocationClock();
    // A C string that lives as long as the engine: the hook raises it without converting anything.
    const timeoutText = timeoutMessage(limits);
    const timeoutPointer = raw.malloc(timeoutText.length + 1);
    lua.module.stringToUTF8(timeoutText, timeoutPointer, timeoutText.length + 1);
    const hookPointer = lua.module.addFunction((L: number) => {
      if (clock.timeUp()) {
        raw.lua_pushstring(L, timeoutPointer);
        raw.lua_error(L);
      }
    }, 'vii');
    // hook_thread(co or wrapped function): threads copy the hook of the thread that makes them, which an
    // unhooked task has not got; a function from coroutine.wrap holds its thread as upvalue 1.
    const hookThreadPointer = lua.module.addFunction((L: number) => {
      if (raw.lua_type(L, 1) === LUA_TFUNCTION) lua.lua_getupvalue(L, 1, 1);
      const thread = lua.lua_tothread(L, -1);
      if (thread) lua.lua_sethook(thread, hookPointer, LUA_MASK_COUNT, HOOK_INSTRUCTION_COUNT);
      return 0;
    }, 'ii');
    // Same accounting and cap as wasmoon's traced allocator, without its per-call wrappers (in wasm when it can be).
    const allocator = cappedAllocator(lua, raw, exports, g.getMemoryUsed(), () => clock.timeUp());
    raw.lua_setallocf(state, allocator.pointer, allocator.ud);
    const strings = new WasmStrings(lua, raw);
    const bridge = new LuaBridge(lua, raw, strings, host, WasmJ2t.create(exports, raw));
    for (const lib of [LuaLibraries.Base, LuaLibraries.Table, LuaLibraries.String, LuaLibraries.Math, LuaLibraries.Coroutine]) {
      g.loadLibrary(lib);
    }
    g.set('__host', hostFunctions(host, timeoutMessage(limits)));
    const timeUpPointer = lua.module.addFunction((L: number) => {
      raw.lua_pushboolean(L, clock.timeUp() ? 1 : 0);
      return 1;
    }, 'ii');
    // The task loop's step (invokeAll) belongs to the sandbox made below: bound to it once it exists.
    let stepOf: ((L: number) => number) | undefined;
    const stepPointer = lua.module.addFunction((L: number) => {
      try {
        return stepOf!(L);
      } catch (err) {
        if (err === Infinity) throw err;
        raw.lua_settop(L, 0);
        strings.pushC(L, err instanceof Error ? err.message : String(err));
        return raw.lua_error(L);
      }
    }, 'ii');
    const hex = hexCFunctions(lua, raw, strings);
    for (const [name, pointer] of [
      ['__hex_decode', hex.decode],
      ['__hex_encode', hex.encode],
      ['__j2t', bridge.j2tPointer],
      ['__base64_j2t', bridge.base64J2tPointer],
      ['__save', bridge.savePointer],
      ['__update', bridge.updatePointer],
      ['__time_up', timeUpPointer],
      ['__step', stepPointer],
      ['__hook_thread', hookThreadPointer],
      ['__lazy_fill', bridge.lazyFillPointer],
      ['__lazy_get', bridge.lazyGetPointer],
    ] as const) {
      raw.lua_pushcclosure(state, pointer, 0);
      lua.lua_setglobal(state, name);
    }
    bridge.pushLazyMeta(state);
    lua.lua_setglobal(state, '__lazy_mt');
    // The prelude returns nothing, so this single doStringSync is clear of the 1.16 bug.
    engine.doStringSync(PRELUDE_LUA);
    const ref = (name: string): number => {
      lua.lua_getglobal(state, name);
      return lua.luaL_ref(state, LUA_REGISTRYINDEX);
    };
    const refs = { compile: ref('__compile_rule'), invokeTask: ref('__invoke_task') };
    const sandbox = new LuaSandbox(engine, lua, raw, strings, new PayloadWindow(lua, raw), allocator, bridge, limits, clock, hookPointer, refs);
    stepOf = (L) => sandbox.step(L);
    return sandbox;
  }

  /** Compiles a rule's scripts into a fresh environment, in one protected call; empty scripts are skipped. */
  compile(scripts: Record<ScriptName, string>): CompileOutcome {
    const { raw, state } = this;
    this.setHook(true);
    raw.lua_settop(state, 0);
    raw.lua_rawgeti(state, LUA_REGISTRYINDEX, this.compileRef);
    for (const name of SCRIPT_NAMES) {
      if (scripts[name].trim() === '') raw.lua_pushnil(state);
      else this.pushString(scripts[name]);
    }
    // The call leaves env, nil or nil, error (or the error it raised).
    const end = this.protectedCall(3, 2);
    if (end.timedOut || end.rc !== 0 || raw.lua_type(state, 1) !== LUA_TTABLE) {
      // Once the time is up that is the outcome, whatever error the compile ended with (as for invoke).
      const error = end.timedOut ? timeoutMessage(this.limits) : this.popError();
      raw.lua_settop(state, 0);
      return end.timedOut || end.refused ? { ok: false, error, transient: true } : { ok: false, error };
    }
    raw.lua_settop(state, 1);
    return { ok: true, envRef: raw.luaL_ref(state, LUA_REGISTRYINDEX) };
  }

  release(envRef: number): void {
    this.lua.luaL_unref(this.state, LUA_REGISTRYINDEX, envRef);
  }

  /** Runs one payload through one compiled rule under the soft time limit; once that passed, it is the outcome. */
  invoke(envRef: number, payload: string): InvokeOutcome {
    let outcome: InvokeOutcome | undefined;
    this.invokeAll([envRef], taskPayloads([payload]), {
      starting: () => {},
      ended: (_p, _r, status, message) => {
        outcome = message === undefined ? { status } : { status, message };
      },
      skipped: () => {},
    });
    return outcome!;
  }

  /**
   * Runs every payload through every rule (envRefs, undefined for a rule that did not compile), payload by
   * payload, each invocation under its own soft time limit, reporting to `visitor` in that order.
   *
   * `unhooked`: without the instruction hook, which costs about 9 % of a worker's time on a typical rule
   * (Lua 5.4 calls `luaG_traceexec` before every instruction while a count hook is set). Nothing then stops
   * an endless loop from inside: the pool watches such tasks from the main thread (overrun-watch.ts). An
   * unhooked invocation that ends past its deadline, where the hook could have ended it sooner, stops the
   * task there and the answer is false: the task must run again hooked, in a fresh Lua state (its
   * invocation may have left globals a hooked run would not have), for its outcome to be the limit's.
   *
   * One protected call runs the whole task: the prelude's `__invoke_task` loop asks `step` for each
   * invocation, which reports the last one's outcome, starts the next one's clock and hands Lua its
   * environment and, when the payload changes, the payload. That is one crossing an invocation instead
   * of a dozen. An error that escapes the loop (the sticky time limit raised in the loop's own code, or
   * a memory error there) ends the invocation it was in, and a new protected call goes on from the next.
   */
  invokeAll(envRefs: readonly (number | undefined)[], payloads: TaskPayloads, visitor: InvocationVisitor, unhooked = false): boolean {
    if (envRefs.length === 0 || payloads.ends.length === 0) return true;
    const { raw, state } = this;
    const task: TaskCursor = { envRefs, payloads, visitor, payload: 0, rule: -1, active: false, done: false, pushed: -1, unhooked, overran: false };
    this.setHook(!unhooked);
    this.task = task;
    try {
      while (!task.done) {
        raw.lua_settop(state, 0);
        raw.lua_rawgeti(state, LUA_REGISTRYINDEX, this.invokeTaskRef);
        const end = this.protectedCall(0, 0);
        // The loop's `args` is gone with the call: the next call pushes its payload again.
        task.pushed = -1;
        this.bridge.endInvocation();
        if (end.rc === 0 || task.done) break;
        if (!task.active) throw new Error(`the task loop failed outside an invocation: ${this.popError()}`);
        task.active = false;
        if (unhooked && end.late) {
          task.overran = true;
          break;
        }
        if (end.timedOut) visitor.ended(task.payload, task.rule, INVOKE_TIMEOUT, timeoutMessage(this.limits), performance.now());
        else visitor.ended(task.payload, task.rule, INVOKE_ERROR, this.popError(), performance.now());
      }
      if (!task.done && !task.overran) throw new Error('the task loop ended before its last invocation');
      return !task.overran;
    } finally {
      raw.lua_settop(state, 0);
      this.task = undefined;
      this.window.release();
    }
  }

  /**
   * `step(status, message)`, called by `__invoke_task`: ends the running invocation with that outcome,
   * then answers the next one's environment, and its payload when that changed (nothing: the task is done).
   */
  private step(L: number): number {
    const task = this.task;
    if (task === undefined) throw new Error('step called outside a task');
    const nowMs = performance.now();
    if (task.active) {
      task.active = false;
      this.bridge.endInvocation();
      if (task.unhooked && this.clock.passedBy(nowMs)) {
        task.overran = true;
        task.done = true;
        return 0;
      }
      if (this.clock.expired) task.visitor.ended(task.payload, task.rule, INVOKE_TIMEOUT, timeoutMessage(this.limits), nowMs);
      // A small integer: read as a double, without the BigInt lua_tointegerx makes.
      else task.visitor.ended(task.payload, task.rule, this.raw.lua_tonumberx(L, 1, 0), this.raw.lua_type(L, 2) === LUA_TSTRING ? this.readMessage(L, 2) : undefined, nowMs);
    }
    let envRef: number | undefined;
    do {
      if (++task.rule === task.envRefs.length) {
        task.rule = 0;
        task.payload++;
      }
      if (task.payload >= task.payloads.ends.length) {
        task.done = true;
        return 0;
      }
      envRef = task.envRefs[task.rule];
      if (envRef === undefined) task.visitor.skipped(task.payload, task.rule);
    } while (envRef === undefined);
    task.active = true;
    task.visitor.starting(task.payload, task.rule);
    // Before the payload is pushed: the allocator refuses large allocations while the last invocation's
    // clock says its time is up, and a large payload is one.
    this.clock.start(this.limits.timeoutMs, nowMs);
    if (envRef !== this.envRef) {
      this.envRef = envRef;
      this.envRefBig = BigInt(envRef);
    }
    const { raw } = this;
    raw.lua_rawgeti(L, LUA_REGISTRYINDEX, this.envRefBig);
    let results = 1;
    if (task.pushed !== task.payload) {
      // Outside the memory cap, as the payload was always pushed: a cap reached here would be a Lua panic
      // in a call that cannot take it, and the payload is not the script's allocation.
      this.allocator.limit(0);
      this.window.push(L, task.payloads, task.payload);
      this.allocator.limit(this.limits.memoryMb * 1024 * 1024);
      task.pushed = task.payload;
      results = 2;
    }
    return results;
  }

  /**
   * Whether J2T decodes arrays in wasm (when the instance allows it; on by default). Off, every text takes
   * the JS path: the differential tests compare both in one Lua state, whose string hashes (and so
   * `pairs` order) are its own.
   */
  get wasmArrays(): boolean {
    return this.bridge.wasm !== undefined && this.bridge.useWasmArrays;
  }

  set wasmArrays(on: boolean) {
    this.bridge.useWasmArrays = on;
  }

  /**
   * Whether J2T scans flat objects in wasm, and `rds:Save` its record table, so that a save of either
   * takes the scan without JSON.parse, a walk from JS or a record object (on by default, when the instance
   * allows it). Off, they take the JS path, as the differential tests compare.
   */
  get wasmScans(): boolean {
    return this.bridge.wasm !== undefined && this.bridge.useWasmScans;
  }

  set wasmScans(on: boolean) {
    this.bridge.useWasmScans = on;
  }

  memoryUsed(): number {
    return this.allocator.used;
  }

  /**
   * The one way into Lua for compiles and invocations alike: each call gets its own clock and memory
   * cap, and leaves neither behind. The limits apply only inside: an allocation refused outside one
   * (pushing the next payload) would be a Lua panic, which aborts the whole wasm instance.
   */
  private protectedCall(argCount: number, resultCount: number): CallEnd {
    this.allocator.limit(this.limits.memoryMb * 1024 * 1024);
    this.clock.start(this.limits.timeoutMs);
    try {
      const rc = this.raw.lua_pcallk(this.state, argCount, resultCount, 0, 0, 0);
      return { rc, timedOut: this.clock.expired, refused: this.allocator.refused, late: this.clock.passedBy(performance.now()) };
    } finally {
      this.clock.stop();
      this.allocator.limit(0);
    }
  }

  /** Sets or clears the main state's count hook; coroutines carry their own (hook_thread). */
  private setHook(on: boolean): void {
    if (on === this.hookOn) return;
    this.lua.lua_sethook(this.state, on ? this.hookPointer : 0, on ? LUA_MASK_COUNT : 0, HOOK_INSTRUCTION_COUNT);
    this.hookOn = on;
  }

  private popError(): string {
    const { lua, state } = this;
    const message = lua.lua_type(state, -1) === LUA_TSTRING ? this.readMessage(state, -1) : 'unknown Lua error';
    lua.lua_settop(state, 0);
    return message;
  }

  /** A message a script made (any length) as it crosses to JS: its head only, capped as the answers cap it. */
  private readMessage(L: number, index: number): string {
    const { head, restBytes } = this.strings.readHead(L, index, MESSAGE_HEAD_BYTES);
    return capMessage(this.normalise(head), restBytes);
  }

  private normalise(message: string): string {
    return message === MEMORY_ERROR || message.endsWith(`: ${MEMORY_ERROR}`) ? this.memoryMessage : message;
  }

  /** Byte-exact (scripts and payloads may hold NUL). */
  private pushString(text: string): void {
    this.strings.pushFull(this.state, text);
  }
}

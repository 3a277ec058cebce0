/**
 * One wasmoon Lua state per worker, locked down: only the base, table, string, math and coroutine
 * libraries (no io, os, debug, package), text-only `load`, a per-invocation soft time limit from an
 * instruction-count hook, and a memory cap on the Lua allocator.
 *
 * Rules are compiled once into environments kept in the Lua registry, and JS calls them through raw
 * stack operations: wasmoon 1.16 corrupts memory after repeated `doString` calls that return values
 * (ceifa/wasmoon#109, fixed only on git main), and the raw calls are also the cheapest way in.
 */
import { LuaFactory, LUA_REGISTRYINDEX, LuaLibraries, type LuaEngine, type LuaWasm } from 'wasmoon';
import { hostFunctions, INVOKE_ERROR, PRELUDE_LUA, type LibHost } from './lua-libs.js';

export interface SandboxLimits {
  timeoutMs: number;
  memoryMb: number;
}

export interface InvokeOutcome {
  status: number;
  message?: string;
}

/** Lua checks the clock every this many VM instructions; ~0.1 ms of Lua at wasmoon's speed. */
const HOOK_INSTRUCTION_COUNT = 2000;
const LUA_MASK_COUNT = 8;
const LUA_TSTRING = 4;
const MEMORY_ERROR = 'not enough memory';

export type ScriptName = 'actions' | 'success' | 'failed';

/** The three scripts of a rule, compiled into one environment held by a registry reference. */
export type CompileOutcome = { ok: true; envRef: number } | { ok: false; error: string };

export class LuaSandbox {
  private deadline = Infinity;
  private readonly hookPointer: number;

  private constructor(
    private readonly engine: LuaEngine,
    private readonly lua: LuaWasm,
    private readonly limits: SandboxLimits,
    private readonly refs: { newEnv: number; compile: number; check: number; invoke: number },
  ) {
    const state = engine.global.address;
    // Every Lua thread created later (coroutines) inherits this hook from the main state.
    this.hookPointer = lua.module.addFunction((L: number) => {
      if (Date.now() > this.deadline) {
        lua.lua_pushstring(L, this.timeoutMessage);
        lua.lua_error(L);
      }
    }, 'vii');
    lua.lua_sethook(state, this.hookPointer, LUA_MASK_COUNT, HOOK_INSTRUCTION_COUNT);
  }

  get timeoutMessage(): string {
    return `time limit exceeded (${this.limits.timeoutMs} ms)`;
  }

  get memoryMessage(): string {
    return `memory limit exceeded (${this.limits.memoryMb} MB)`;
  }

  static async create(limits: SandboxLimits, host: LibHost): Promise<LuaSandbox> {
    const engine = await new LuaFactory().createEngine({ openStandardLibs: false, traceAllocations: true, enableProxy: false });
    const g = engine.global;
    for (const lib of [LuaLibraries.Base, LuaLibraries.Table, LuaLibraries.String, LuaLibraries.Math, LuaLibraries.Coroutine]) {
      g.loadLibrary(lib);
    }
    g.set('__host', hostFunctions(host, `time limit exceeded (${limits.timeoutMs} ms)`));
    // The prelude returns nothing, so this single doStringSync is clear of the 1.16 bug.
    engine.doStringSync(PRELUDE_LUA);
    const lua = g.lua;
    const state = g.address;
    const ref = (name: string): number => {
      lua.lua_getglobal(state, name);
      return lua.luaL_ref(state, LUA_REGISTRYINDEX);
    };
    const refs = { newEnv: ref('__new_env'), compile: ref('__compile'), check: ref('__check'), invoke: ref('__invoke') };
    return new LuaSandbox(engine, lua, limits, refs);
  }

  /** Compiles a rule's scripts into a fresh environment; empty success/failed scripts are skipped. */
  compile(scripts: Record<ScriptName, string>): CompileOutcome {
    const { lua } = this;
    const state = this.engine.global.address;
    lua.lua_settop(state, 0);
    lua.lua_rawgeti(state, LUA_REGISTRYINDEX, BigInt(this.refs.newEnv));
    if (lua.lua_pcallk(state, 0, 1, 0, 0, null) !== 0) return { ok: false, error: this.popError() };
    const envRef = lua.luaL_ref(state, LUA_REGISTRYINDEX);
    const fail = (error: string): CompileOutcome => {
      this.release(envRef);
      return { ok: false, error };
    };
    for (const name of ['actions', 'success', 'failed'] as const) {
      if (scripts[name].trim() === '') continue;
      lua.lua_rawgeti(state, LUA_REGISTRYINDEX, BigInt(this.refs.compile));
      lua.lua_rawgeti(state, LUA_REGISTRYINDEX, BigInt(envRef));
      this.pushString(scripts[name]);
      lua.lua_pushstring(state, name);
      const error = this.callForMessage(3);
      if (error !== undefined) return fail(error);
    }
    lua.lua_rawgeti(state, LUA_REGISTRYINDEX, BigInt(this.refs.check));
    lua.lua_rawgeti(state, LUA_REGISTRYINDEX, BigInt(envRef));
    lua.lua_pushboolean(state, scripts.success.trim() === '' ? 0 : 1);
    lua.lua_pushboolean(state, scripts.failed.trim() === '' ? 0 : 1);
    const error = this.callForMessage(3);
    if (error !== undefined) return fail(error);
    return { ok: true, envRef };
  }

  release(envRef: number): void {
    this.lua.luaL_unref(this.engine.global.address, LUA_REGISTRYINDEX, envRef);
  }

  /** Runs one payload through one compiled rule under the soft time limit. */
  invoke(envRef: number, payload: string): InvokeOutcome {
    const { lua } = this;
    const state = this.engine.global.address;
    lua.lua_settop(state, 0);
    lua.lua_rawgeti(state, LUA_REGISTRYINDEX, BigInt(this.refs.invoke));
    lua.lua_rawgeti(state, LUA_REGISTRYINDEX, BigInt(envRef));
    this.pushString(payload);
    const rc = this.protectedCall(2, 2);
    if (rc !== 0) return { status: INVOKE_ERROR, message: this.popError() };
    const status = Number(lua.lua_tointegerx(state, 1, null));
    const message = lua.lua_type(state, 2) === LUA_TSTRING ? this.normalise(lua.lua_tolstring(state, 2, null)) : undefined;
    lua.lua_settop(state, 0);
    return message === undefined ? { status } : { status, message };
  }

  memoryUsed(): number {
    return this.engine.global.getMemoryUsed();
  }

  /** Calls the function below `argCount` arguments (with the time limit); returns its string result, if any. */
  private callForMessage(argCount: number): string | undefined {
    const { lua } = this;
    const state = this.engine.global.address;
    const rc = this.protectedCall(argCount, 1);
    if (rc !== 0) return this.popError();
    const message = lua.lua_type(state, -1) === LUA_TSTRING ? lua.lua_tolstring(state, -1, null) : undefined;
    lua.lua_settop(state, -2);
    return message === undefined ? undefined : this.normalise(message);
  }

  /**
   * The limits apply only inside protected calls: an allocation refused outside one (pushing the
   * next payload) would be a Lua panic, which aborts the whole wasm instance.
   */
  private protectedCall(argCount: number, resultCount: number): number {
    const g = this.engine.global;
    g.setMemoryMax(this.limits.memoryMb * 1024 * 1024);
    this.deadline = Date.now() + this.limits.timeoutMs;
    try {
      return this.lua.lua_pcallk(g.address, argCount, resultCount, 0, 0, null);
    } finally {
      this.deadline = Infinity;
      g.setMemoryMax(undefined);
    }
  }

  private popError(): string {
    const { lua } = this;
    const state = this.engine.global.address;
    const message = lua.lua_type(state, -1) === LUA_TSTRING ? lua.lua_tolstring(state, -1, null) : 'unknown Lua error';
    lua.lua_settop(state, 0);
    return this.normalise(message);
  }

  private normalise(message: string): string {
    return message === MEMORY_ERROR || message.endsWith(`: ${MEMORY_ERROR}`) ? this.memoryMessage : message;
  }

  /** Byte-exact (payloads may hold NUL), via the heap for long strings as wasmoon does. */
  private pushString(text: string): void {
    const { lua } = this;
    const state = this.engine.global.address;
    const module = lua.module;
    const length = module.lengthBytesUTF8(text);
    const pointer = module._malloc(length + 1);
    try {
      module.stringToUTF8(text, pointer, length + 1);
      lua.lua_pushlstring(state, pointer, length);
    } finally {
      module._free(pointer);
    }
  }
}

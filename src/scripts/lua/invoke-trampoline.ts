/**
 * emscripten's `invoke_vii` for wasmoon's module, without the debug build's cost. Lua's
 * `luaD_rawrunprotected` calls it for every protected call (the task's `lua_pcallk`, and one an
 * invocation: the prelude's `invoke`'s `pcall`); the glue's version formats two assertion messages, calls `stackSave` through
 * `Function.apply`, and asks the wasm table for the function again only to assert that its cache holds it.
 *
 * Same semantics: a longjmp arrives as a thrown number, restores the stack and sets `setThrew`; anything
 * else passes on. Only the module's own functions are cached (indexes below the table's length at
 * instantiation): `addFunction` places new ones above or in freed slots of its own, so a cached entry is
 * never replaced. Until the instance's exports are bound (or if they lack what it needs), the glue's own
 * trampoline answers.
 */
type WasmExports = Record<string, unknown>;

type Vii = (index: number, a: number, b: number) => void;
type WasmFunction = (a: number, b: number) => void;

interface WasmTable {
  readonly length: number;
  get(index: number): WasmFunction;
}

interface Bound {
  stackSave: () => number;
  stackRestore: (sp: number) => void;
  setThrew: (threw: number, value: number) => void;
  table: WasmTable;
  staticLength: number;
}

export class InvokeTrampoline {
  private bound: Bound | undefined;
  private readonly cache: Array<WasmFunction | undefined> = [];

  constructor(private readonly glue: Vii) {}

  /** Takes the instance's exports; without a stack API and a function table it leaves the glue's trampoline in charge. */
  bind(exports: WasmExports): void {
    const { stackSave, stackRestore, setThrew, __indirect_function_table: table } = exports;
    if (typeof stackSave !== 'function' || typeof stackRestore !== 'function' || typeof setThrew !== 'function') return;
    const functions = table as Partial<WasmTable> | undefined;
    if (typeof functions?.get !== 'function' || typeof functions.length !== 'number') return;
    this.bound = {
      stackSave: stackSave as Bound['stackSave'],
      stackRestore: stackRestore as Bound['stackRestore'],
      setThrew: setThrew as Bound['setThrew'],
      table: functions as WasmTable,
      staticLength: functions.length,
    };
  }

  readonly invokeVii: Vii = (index, a, b) => {
    const bound = this.bound;
    if (bound === undefined) return this.glue(index, a, b);
    const sp = bound.stackSave();
    try {
      this.entry(bound, index)(a, b);
    } catch (e) {
      bound.stackRestore(sp);
      if (e !== (e as number) + 0) throw e;
      bound.setThrew(1, 0);
    }
  };

  private entry(bound: Bound, index: number): WasmFunction {
    if (index >= bound.staticLength) return bound.table.get(index);
    let fn = this.cache[index];
    if (fn === undefined) {
      fn = bound.table.get(index);
      this.cache[index] = fn;
    }
    return fn;
  }
}

/** Puts a trampoline in the import object in place of the glue's, when it has one to replace. */
export function replaceInvokeTrampoline(imports: unknown): InvokeTrampoline | undefined {
  const env = (imports as { env?: Record<string, unknown> } | undefined)?.env;
  const glue = env?.invoke_vii;
  if (env === undefined || typeof glue !== 'function') return undefined;
  const trampoline = new InvokeTrampoline(glue as Vii);
  env.invoke_vii = trampoline.invokeVii;
  return trampoline;
}

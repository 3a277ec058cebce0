/**
 * The libraries a rule sees (RHILEX's `json`, `hex`, `time`, `rds`, `Throw`, `Debug`) and the Lua side of
 * the sandbox: the whitelisted globals, one environment per rule, the action-chain driver.
 *
 * Everything that can be written in Lua is, because every Lua -> JS crossing through wasmoon's
 * generic bridge costs microseconds; the chain driver runs inside Lua, and so does the loop over a
 * task's (payload, rule) pairs, so JS enters Lua once per task. `json:J2T` and `rds:*` are raw C
 * functions (lua-bridge.ts, one crossing each), so is the byte work of `hex:*` (hex-lib.ts); the
 * functions here are the generic path for the rest, and for records the fast path declines.
 */
import type { FlatScan } from './flat-json.js';
import { setField } from './lua-bridge.js';

/** Status codes the prelude's `invoke` answers for an invocation. */
export const INVOKE_OK = 0;
export const INVOKE_STOPPED = 1;
export const INVOKE_ERROR = 2;
export const INVOKE_TIMEOUT = 3;

/** The worker-side hooks the libraries call. */
export interface LibHost {
  /** Validates and queues a record; returns the error string for Lua, or undefined on success. */
  store(kind: 'save' | 'update', uuid: unknown, record: Record<string, unknown>): string | undefined;
  /** See RecordStore (lua-bridge.ts): a refusal that may depend on key order answers null. */
  storeUnordered?(kind: 'save' | 'update', uuid: string, record: Record<string, unknown>): string | undefined | null;
  /** See RecordStore (lua-bridge.ts): a save from a scan of its record, null to leave it to the other two. */
  storeScanned?(kind: 'save' | 'update', uuid: string, scan: FlatScan): string | undefined | null;
  debug(message: string): void;
}

const DEBUG_MESSAGE_MAX = 1000;

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** `YYYY-MM-DD HH:MM:SS` in UTC, as `queryLastData` prints `create_at`. */
function utcTime(d: Date): string {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}


/** `(k1, v1, k2, v2, …)` of the generic `rds` path as the record object the fast path builds. */
function pairsToRecord(keyValues: unknown[]): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let i = 0; i < keyValues.length; i += 2) setField(record, String(keyValues[i]), keyValues[i + 1]);
  return record;
}

/** The JS functions handed to the prelude once, as `__host`; the prelude keeps them in locals. */
export function hostFunctions(host: LibHost, timeoutMessage: string): Record<string, unknown> {
  return {
    timeoutMessage,
    time: () => utcTime(new Date()),
    timeMs: () => {
      const d = new Date();
      return `${utcTime(d)}.${pad(d.getUTCMilliseconds(), 3)}`;
    },
    tsUnix: () => String(Math.floor(Date.now() / 1000)),
    tsUnixNano: () => String(BigInt(Date.now()) * 1_000_000n),
    save: (uuid: unknown, ...keyValues: unknown[]) => host.store('save', uuid, pairsToRecord(keyValues)),
    updateLast: (uuid: unknown, ...keyValues: unknown[]) => host.store('update', uuid, pairsToRecord(keyValues)),
    debug: (message: string) => host.debug(message.length > DEBUG_MESSAGE_MAX ? `${message.slice(0, DEBUG_MESSAGE_MAX)}…` : message),
  };
}

/**
 * Runs once per engine, with the standard base, table, string, math and coroutine libraries open
 * (io, os, debug, package were never opened). Defines the two globals JS calls, `__compile_rule` and
 * `__invoke_task`; everything else a rule can reach is in its environment.
 */
export const PRELUDE_LUA = String.raw`
local host = __host
local j2t, base64_j2t, save_fast, update_fast, time_up = __j2t, __base64_j2t, __save, __update, __time_up
local hex_decode, hex_encode, step, hook_thread = __hex_decode, __hex_encode, __step, __hook_thread
__host, __j2t, __base64_j2t, __save, __update, __time_up = nil, nil, nil, nil, nil, nil
__hex_decode, __hex_encode, __step, __hook_thread = nil, nil, nil, nil
local TIMEOUT = host.timeoutMessage
local save, update_last, debug_log = host.save, host.updateLast, host.debug
local h_time, h_time_ms, h_ts_unix, h_ts_unix_nano = host.time, host.timeMs, host.tsUnix, host.tsUnixNano
local rawload, rawpcall, rawxpcall, rawerror = load, pcall, xpcall, error
local next, type, tostring, select, unpack, sub, concat = next, type, tostring, select, table.unpack, string.sub, table.concat
local rawsetmetatable, rawgetmetatable, rawget, rawset, rawlen, rawnext = setmetatable, getmetatable, rawget, rawset, rawlen, next

-- A flat JSON object from J2T starts empty, with this metatable (lua-bridge.ts). Its first two reads are
-- answered from the parsed object (lazy_get: a network input's envelope is read for one or two fields);
-- anything else that looks into it fills it (lazy_fill, which also drops the metatable) exactly as J2T
-- would have built it, so the table a script sees is the same; rds:Save of one nothing changed stores
-- J2T's parsed object directly. The functions that bypass metamethods (next, raw*, get/setmetatable) fill
-- it first, so the metatable is never seen. Errors the VM raises for the assignment keep their text and
-- the script's line.
local LAZY, lazy_fill, lazy_get = __lazy_mt, __lazy_fill, __lazy_get
__lazy_mt, __lazy_fill, __lazy_get = nil, nil, nil
LAZY.__index = lazy_get
LAZY.__newindex = function(t, k, v)
  lazy_fill(t)
  if k == nil then rawerror('table index is nil', 2) end
  if k ~= k then rawerror('table index is NaN', 2) end
  rawset(t, k, v)
end
LAZY.__len = function(t) lazy_fill(t) return rawlen(t) end
LAZY.__pairs = function(t) lazy_fill(t) return rawnext, t, nil end
-- Varargs and tail calls: the raw function sees the same arguments (none is not nil) and names itself in errors.
local function filled_first(raw_fn)
  return function(...)
    local t = ...
    if rawgetmetatable(t) == LAZY then lazy_fill(t) end
    return raw_fn(...)
  end
end

-- The soft time limit raises TIMEOUT from the instruction hook. Once time_up() (JS: the deadline has
-- passed, and it stays passed), everything that catches errors raises TIMEOUT again, whatever it
-- caught: a <close> handler or an xpcall handler may have replaced the error with anything.
local function rethrow_timeout(ok, ...)
  if not ok and time_up() then rawerror(TIMEOUT, 0) end
  return ok, ...
end
local function safe_pcall(f, ...) return rethrow_timeout(rawpcall(f, ...)) end
local function safe_xpcall(f, handler, ...)
  return rethrow_timeout(rawxpcall(f, function(e) if time_up() then return TIMEOUT end return handler(e) end, ...))
end
local co_resume, co_close = coroutine.resume, coroutine.close
-- A coroutine made while its task runs without the instruction hook would keep running without it,
-- even resumed in a hooked task later: each one gets the hook of its own (hook_thread). The locals
-- keep the library's names, so a bad argument is named as before ('create', 'wrap').
local create, wrap = coroutine.create, coroutine.wrap
local coroutine_lib = {
  create = function(f) local co = create(f) hook_thread(co) return co end,
  wrap = function(f) local fn = wrap(f) hook_thread(fn) return fn end,
  isyieldable = coroutine.isyieldable, running = coroutine.running, status = coroutine.status,
  yield = coroutine.yield,
  resume = function(co, ...) return rethrow_timeout(co_resume(co, ...)) end,
  -- close runs the coroutine's pending <close> handlers and returns their error.
  close = function(co) return rethrow_timeout(co_close(co)) end,
}
-- A full collection is one VM instruction that can take milliseconds: check the clock before each.
local rawcollect = collectgarbage
local function safe_collectgarbage(opt, ...)
  if opt == nil or opt == 'collect' or opt == 'count' or opt == 'step' then
    if opt ~= 'count' and time_up() then rawerror(TIMEOUT, 0) end
    return rawcollect(opt, ...)
  end
  rawerror("collectgarbage: only 'collect', 'count' and 'step' are allowed", 2)
end
-- Lua runs finalizers with debug hooks off and turns their errors into (dropped) warnings, so a
-- __gc loop could never be stopped: no metatable with a __gc field is accepted. A field added later
-- does not mark the object for finalization (Lua 5.4 manual, 2.5.3).
local function safe_setmetatable(t, mt)
  if rawgetmetatable(t) == LAZY then lazy_fill(t) end
  if rawgetmetatable(mt) == LAZY then lazy_fill(mt) end
  if type(mt) == 'table' and rawget(mt, '__gc') ~= nil then
    rawerror('setmetatable: __gc finalizers are not allowed in rules', 2)
  end
  return rawsetmetatable(t, mt)
end

local string_lib = {}
for k, v in next, string do if k ~= 'dump' then string_lib[k] = v end end
-- s:method() still reaches the real string table; hide the metatable so no script can change it.
getmetatable('').__metatable = false

-- Cut in Lua, so a huge line is not copied to JS first; DEBUG_MESSAGE_MAX characters fit in this many bytes.
local DEBUG_BYTES_MAX = ${4 * DEBUG_MESSAGE_MAX + 4}
local function Debug(...)
  local n = select('#', ...)
  local parts = {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  local line = concat(parts, ' ')
  if #line > DEBUG_BYTES_MAX then line = sub(line, 1, DEBUG_BYTES_MAX) end
  debug_log(line)
end

local base = {
  assert = assert, error = error, ipairs = ipairs, next = filled_first(next), pairs = pairs, print = Debug,
  rawequal = rawequal, rawget = filled_first(rawget), rawlen = filled_first(rawlen), rawset = filled_first(rawset), select = select,
  getmetatable = filled_first(rawgetmetatable), setmetatable = safe_setmetatable, tonumber = tonumber, tostring = tostring,
  type = type, _VERSION = _VERSION, pcall = safe_pcall, xpcall = safe_xpcall,
  collectgarbage = safe_collectgarbage, Debug = Debug,
  -- RHILEX's Throw only logged; ours raises, so the chain stops and the error carries the caller's line.
  Throw = function(err) rawerror(tostring(err), 2) end,
}

-- fast(uuid, t) answers false (stored), an error string, or true when a key or value is not a
-- string/number/boolean: the generic path then copies the table as (k1, v1, k2, v2, ...).
-- Only scalars cross to JS here: wasmoon converts a table argument recursively without checking the Lua
-- stack, and a nested table from a device payload would write past it into the wasm heap.
-- r: what the fast C function answered for (uuid, t), true for anything it leaves to this path (a
-- value that is not a table among them). rds:Save calls the fast one itself: one Lua call and no
-- type() a record on the usual path.
local function record_call(r, fn, uuid, t)
  if type(t) ~= 'table' then return 'missing table fields' end
  if r ~= true then return r end
  local buf, n = {}, 0
  for k, v in next, t do
    local tk, tv = type(k), type(v)
    if tk ~= 'string' and tk ~= 'number' then return 'attribute names must be strings, got ' .. tk end
    if tv ~= 'string' and tv ~= 'number' and tv ~= 'boolean' then
      return "attribute '" .. tostring(k) .. "' expects a string, number or boolean, got " .. tv
    end
    buf[n + 1] = k
    buf[n + 2] = v
    n = n + 2
  end
  return fn(uuid, unpack(buf, 1, n))
end

-- json:T2J in Lua, so no table ever goes through wasmoon's unchecked recursive conversion. Arrays are
-- tables with keys 1..n only; an empty table is [] (as RHILEX encodes it). Nesting is capped like J2T's.
local T2J_DEPTH_MAX = 200
local json_escapes = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
local function json_escape(c) return json_escapes[c] or string.format('\\u%04x', c:byte()) end
local mtype, sformat, huge = math.type, string.format, math.huge
local function encode(v, depth, out)
  local tv = type(v)
  if tv == 'nil' then out[#out + 1] = 'null'
  elseif tv == 'boolean' then out[#out + 1] = tostring(v)
  elseif tv == 'number' then
    if mtype(v) == 'integer' then out[#out + 1] = tostring(v)
    elseif v ~= v or v == huge or v == -huge then out[#out + 1] = 'null'
    else
      local s = sformat('%.15g', v)
      if tonumber(s) ~= v then s = sformat('%.17g', v) end
      out[#out + 1] = s
    end
  elseif tv == 'string' then out[#out + 1] = '"' .. v:gsub('[%z\1-\31"\\]', json_escape) .. '"'
  elseif tv == 'table' then
    if depth >= T2J_DEPTH_MAX then rawerror('tables nested deeper than ' .. T2J_DEPTH_MAX .. ' levels', 0) end
    local n, count = #v, 0
    for _ in next, v do count = count + 1 end
    if count == n then
      out[#out + 1] = '['
      for i = 1, n do
        if i > 1 then out[#out + 1] = ',' end
        encode(v[i], depth + 1, out)
      end
      out[#out + 1] = ']'
    else
      out[#out + 1] = '{'
      local first = true
      for k, item in next, v do
        local tk = type(k)
        if tk ~= 'string' and tk ~= 'number' then rawerror('cannot encode a ' .. tk .. ' key to JSON', 0) end
        if not first then out[#out + 1] = ',' end
        first = false
        encode(tostring(k), depth + 1, out)
        out[#out + 1] = ':'
        encode(item, depth + 1, out)
      end
      out[#out + 1] = '}'
    end
  else rawerror('cannot encode a ' .. tv .. ' to JSON', 0) end
end
local function table_to_json(v)
  local out = {}
  local ok, err = rawpcall(encode, v, 0, out)
  if not ok then
    if time_up() then rawerror(TIMEOUT, 0) end
    return nil, tostring(err)
  end
  return concat(out)
end

-- RHILEX's hex:Hexs2Bytes gives a table of byte values: string.byte makes them from the decoded string,
-- a slice at a time (it puts every value on the Lua stack).
local byte, move = string.byte, table.move
local HEX_SLICE_BYTES = 4096
local function hexs_to_bytes(_, s)
  local bytes, err = hex_decode(s)
  if bytes == nil then return nil, err end
  local t, n = {}, #bytes
  for i = 1, n, HEX_SLICE_BYTES do
    local last = i + HEX_SLICE_BYTES - 1
    if last > n then last = n end
    move({ byte(bytes, i, last) }, 1, last - i + 1, i, t)
  end
  return t, nil
end

local libs = {
  string = string_lib, table = table, math = math, coroutine = coroutine_lib,
  json = {
    -- A C function taking (self, s): a number as tostring writes it, anything else an error at the caller's line.
    J2T = j2t,
    -- RHILEX's: base64 (Go's StdEncoding: padded, newlines skipped) then J2T; (nil, err) on either error.
    base64J2T = function(_, s)
      local ts = type(s)
      if ts ~= 'string' and ts ~= 'number' then rawerror("bad argument #1 to 'base64J2T' (string expected, got " .. ts .. ')', 2) end
      return base64_j2t(tostring(s))
    end,
    T2J = function(_, v) return table_to_json(v) end,
  },
  hex = {
    Hexs2Bytes = hexs_to_bytes,
    Bytes2Hexs = function(_, s) return hex_encode(s), nil end,
  },
  time = {
    Time = function() return h_time() end,
    TimeMs = function() return h_time_ms() end,
    TsUnix = function() return h_ts_unix() end,
    TsUnixNano = function() return h_ts_unix_nano() end,
  },
  rds = {
    Save = function(_, uuid, t)
      local r = save_fast(uuid, t)
      if r == false then return end
      return record_call(r, save, uuid, t)
    end,
    UpdateLast = function(_, uuid, t)
      local r = update_fast(uuid, t)
      if r == false then return end
      return record_call(r, update_last, uuid, t)
    end,
  },
}

-- Each rule gets its own globals and its own copies of the library tables, so one rule cannot
-- redefine rds.Save or string.format for another rule sharing the worker.
local function new_env()
  local env = {}
  for k, v in next, base do env[k] = v end
  for name, lib in next, libs do
    local copy = {}
    for k, v in next, lib do copy[k] = v end
    env[name] = copy
  end
  env._G = env
  env.load = function(chunk, name, _, e) return rawload(chunk, name, 't', e or env) end
  return env
end

-- Loads one script text into env (text mode only) and runs its top level. Returns nil or the error.
local function compile_script(env, src, chunkname)
  local fn, err = rawload(src, '=' .. chunkname, 't', env)
  if not fn then return err end
  local ok, e = rawpcall(fn)
  if not ok then return time_up() and TIMEOUT or tostring(e) end
  return nil
end

local function check(env, need_success, need_failed)
  local actions = env.Actions
  if actions == nil and type(env.Main) == 'function' then
    -- A RHILEX applet (function Main(arg), no Actions): Main is the rule's one action.
    actions = { env.Main }
    env.Actions = actions
  end
  if type(actions) ~= 'table' or #actions == 0 then
    return "actions: 'Actions' must be a functions table (or define function Main(arg), as a RHILEX applet does)"
  end
  for i = 1, #actions do
    if type(actions[i]) ~= 'function' then return 'actions: Actions[' .. i .. '] is not a function' end
  end
  if need_success and type(env.Success) ~= 'function' then return "success: 'Success' callback function missed" end
  if need_failed and type(env.Failed) ~= 'function' then return "failed: 'Failed' callback function missed" end
  return nil
end

local SCRIPT_NAMES = { 'actions', 'success', 'failed' }
-- A rule's scripts (nil for an empty one) compiled into a fresh environment: returns the environment,
-- or nil and the error. One function, so JS runs a whole compile as one protected call with one clock.
function __compile_rule(actions, success, failed)
  local env = new_env()
  local sources = { actions, success, failed }
  for i = 1, #SCRIPT_NAMES do
    if sources[i] ~= nil then
      local err = compile_script(env, sources[i], SCRIPT_NAMES[i])
      if err ~= nil then return nil, err end
    end
  end
  local err = check(env, success ~= nil, failed ~= nil)
  if err ~= nil then return nil, err end
  return env
end

local INVOKE_OK, INVOKE_STOPPED, INVOKE_ERROR, INVOKE_TIMEOUT = 0, 1, 2, 3

local function run_chain(env, args)
  local actions = env.Actions
  local n = #actions
  local data = args
  for i = 1, n do
    local ok, d = actions[i](data)
    -- The last action's first result is not checked (RHILEX), so 'Throw(err); return 0' works.
    if i < n then
      if ok == false then return INVOKE_STOPPED end
      if ok ~= true then
        rawerror('Actions[' .. i .. '] must return true or false as its first result, got ' .. type(ok), 0)
      end
    end
    data = d
  end
  return INVOKE_OK
end

-- One payload through one rule: the chain, then Success() or Failed(err). Returns status, message.
-- Once time is up the status is INVOKE_TIMEOUT whatever the error became (JS makes sure of it too).
local function invoke(env, args)
  local ok, status = rawpcall(run_chain, env, args)
  if ok then
    local success = env.Success
    -- Most rules have none: no type() call then.
    if success ~= nil and type(success) == 'function' then
      local sok, serr = rawpcall(success)
      if not sok then
        if time_up() then return INVOKE_TIMEOUT, TIMEOUT end
        return INVOKE_ERROR, tostring(serr)
      end
    end
    return status
  end
  if time_up() then return INVOKE_TIMEOUT, TIMEOUT end
  local err = tostring(status)
  local failed = env.Failed
  if type(failed) == 'function' then
    local fok = rawpcall(failed, err)
    if not fok and time_up() then return INVOKE_TIMEOUT, TIMEOUT end
  end
  return INVOKE_ERROR, err
end

-- A task's invocations in one call from JS: step() ends the last one with its outcome and hands out
-- the next one's environment, and its payload when that changed; nothing once the task is done.
function __invoke_task()
  local env, args = step()
  while env ~= nil do
    local next_env, next_args = step(invoke(env, args))
    if next_args ~= nil then args = next_args end
    env = next_env
  end
end

dofile, loadfile, load, collectgarbage, string.dump = nil, nil, nil, nil, nil
`;

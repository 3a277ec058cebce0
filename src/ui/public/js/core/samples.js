// Sample rule scripts (RHILEX's shape: an Actions table of functions, Success(), Failed(err)).

const luaString = (s) => `"${String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LUA_KEYWORDS = new Set(['and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'goto', 'if', 'in', 'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while']);
const key = (n) => (IDENT.test(n) && !LUA_KEYWORDS.has(n) ? n : `[${luaString(n)}]`);
const access = (n) => (IDENT.test(n) && !LUA_KEYWORDS.has(n) ? `schemaData.${n}` : `schemaData[${luaString(n)}]`);

function wrap(uuid, saveTable) {
  return `Actions = {
  function(args)
    -- args: the payload pushed to the input, a JSON text such as
    -- [{"tag":"temperature","value":21.5}, ...]
    local dataT, err = json:J2T(args);
    if err ~= nil then
      Throw(err);
      return true, args;
    end;
    local schemaData = {};
    for _, row in ipairs(dataT) do
      schemaData[row.tag] = row.value;
    end;
    local err = rds:Save(${luaString(uuid)}, ${saveTable});
    if err ~= nil then
      Throw(err);
      return 0;
    end;
    return true, args;
  end
}
`;
}

/** The generic sample: one payload tag per attribute of the model. */
export function sampleForModel(model) {
  const attrs = model ? model.attributes : [];
  const uuid = model ? model.uuid : 'SCHEMAXXXXXXXX';
  const body = attrs.length
    ? `{\n${attrs.map((a) => `      ${key(a.name)} = ${access(a.name)}`).join(',\n')}\n    }`
    : '{\n      -- attribute = schemaData.tag,\n    }';
  return wrap(uuid, body);
}

/** RHILEX documentation's sample (water quality, temperature averaged from three probes), with the given uuid. */
export function rhilexSample(uuid) {
  return wrap(uuid || 'SCHEMAXXXXXXXX', `{
      temp = (schemaData.t1 + schemaData.t2 + schemaData.t3) / 3,
      resistivity = schemaData.resistivity,
      conductivity = schemaData.conductivity,
      dissolved_oxygen = schemaData.dissolved_oxygen,
      ph_value = schemaData.ph_value
    }`);
}

/** A one-line preview of rds:Save for a model, like RHILEX's "script preview": typed zero values. */
export function savePreview(model) {
  const zero = (t) => (t === 'INTEGER' || t === 'FLOAT' ? '0' : t === 'BOOL' ? 'false' : t === 'GEO' ? '"0,0"' : '""');
  return `local err = rds:Save(${luaString(model.uuid)}, {${model.attributes.map((a) => `${key(a.name)} = ${zero(a.type)}`).join(', ')}});\nif err ~= nil then Throw(err); return 0; end;`;
}

export const DEFAULT_SUCCESS = 'function Success()\nend\n';
export const DEFAULT_FAILED = 'function Failed(error)\nend\n';

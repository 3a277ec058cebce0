// Sample rule scripts (RHILEX's shape: an Actions table of functions, Success(), Failed(err)), reading
// `args` as the input type hands it over.

const luaString = (s) => `"${String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LUA_KEYWORDS = new Set(['and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'goto', 'if', 'in', 'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while']);
const key = (n) => (IDENT.test(n) && !LUA_KEYWORDS.has(n) ? n : `[${luaString(n)}]`);
const access = (n) => (IDENT.test(n) && !LUA_KEYWORDS.has(n) ? `schemaData.${n}` : `schemaData[${luaString(n)}]`);

/**
 * How the sample reads `args` into {tag, value} rows (`dataT`), by the type of the input the rule reads:
 * the payload itself (HTTP, simulator), or RHILEX's envelopes: the MQTT client's {topic, payload} with the
 * message in base64, the built-in broker's {action, ..., topic, payload} with it as text, the UDP server's
 * {clientAddr, data} with the datagram in hex.
 */
function readArgs(inputType) {
  const fail = `    if err ~= nil then
      Throw(err);
      return true, args;
    end;
`;
  if (inputType === 'GENERIC_MQTT' || inputType === 'GENERIC_MQTT_SERVER') {
    const server = inputType === 'GENERIC_MQTT_SERVER';
    return `    -- args: ${server ? 'an event of the built-in broker, a JSON text such as\n    -- {"action":"publish","clientid":"dev-1","username":"dev","ipaddress":"10.0.0.7",\n    --  "ts":1718000000000,"topic":"plant/line1","payload":"<the message as text>"}\n    -- (connect and disconnect events come too, without topic and payload)' : 'one message from the broker, a JSON text such as\n    -- {"topic":"/topic1/dev","payload":"<base64 of the message>"}'}
    -- whose message is [{"tag":"temperature","value":21.5}, ...]
    local body, err = json:J2T(args);
${fail}${server ? `    if body.action ~= "publish" then
      return true, args;
    end;
` : ''}    local dataT, err = json:${server ? 'J2T' : 'base64J2T'}(body.payload);
${fail}`;
  }
  if (inputType === 'UDP_SERVER') {
    return `    -- args: one datagram, a JSON text such as
    -- {"clientAddr":"10.0.0.7:50123","data":"<hex of the datagram>"}
    -- whose datagram is [{"tag":"temperature","value":21.5}, ...]
    local body, err = json:J2T(args);
${fail}    local bytes, err = hex:Hexs2Bytes(body.data);
${fail}    local dataT, err = json:J2T(string.char(table.unpack(bytes)));
${fail}`;
  }
  return `    -- args: the payload pushed to the input, a JSON text such as
    -- [{"tag":"temperature","value":21.5}, ...]
    local dataT, err = json:J2T(args);
${fail}`;
}

function wrap(uuid, saveTable, inputType) {
  return `Actions = {
  function(args)
${readArgs(inputType)}    local schemaData = {};
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

/** The generic sample: one payload tag per attribute of the model; `inputType` picks how args is read. */
export function sampleForModel(model, inputType) {
  const attrs = model ? model.attributes : [];
  const uuid = model ? model.uuid : 'SCHEMAXXXXXXXX';
  const body = attrs.length
    ? `{\n${attrs.map((a) => `      ${key(a.name)} = ${access(a.name)}`).join(',\n')}\n    }`
    : '{\n      -- attribute = schemaData.tag,\n    }';
  return wrap(uuid, body, inputType);
}

/** RHILEX documentation's sample (water quality, temperature averaged from three probes), with the given uuid. */
export function rhilexSample(uuid, inputType) {
  return wrap(uuid || 'SCHEMAXXXXXXXX', `{
      temp = (schemaData.t1 + schemaData.t2 + schemaData.t3) / 3,
      resistivity = schemaData.resistivity,
      conductivity = schemaData.conductivity,
      dissolved_oxygen = schemaData.dissolved_oxygen,
      ph_value = schemaData.ph_value
    }`, inputType);
}

/** A one-line preview of rds:Save for a model, like RHILEX's "script preview": typed zero values. */
export function savePreview(model) {
  const zero = (t) => (t === 'INTEGER' || t === 'FLOAT' ? '0' : t === 'BOOL' ? 'false' : t === 'GEO' ? '"0,0"' : '""');
  return `local err = rds:Save(${luaString(model.uuid)}, {${model.attributes.map((a) => `${key(a.name)} = ${zero(a.type)}`).join(', ')}});\nif err ~= nil then Throw(err); return 0; end;`;
}

export const DEFAULT_SUCCESS = 'function Success()\nend\n';
export const DEFAULT_FAILED = 'function Failed(error)\nend\n';

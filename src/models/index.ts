export * from './types.js';
export { newId, newUniqueId, isId, type IdPrefix } from './ids.js';
export { checkRecord, checkValue, isGeo, RefusedValue, roundDecimals } from './record-check.js';
export { ATTRIBUTE_NAME_PATTERN, RESERVED_NAMES, zeroValue, type AttributeFields } from './attribute-input.js';
export { TEMPLATE_IDS } from './templates.js';
export { MODELS_FILE, modelsFilePath } from './models-file.js';
export { ModelRegistry } from './registry.js';
export { ATTRIBUTES_MAX } from './types.js';

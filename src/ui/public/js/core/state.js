// Shared, cached server state: the data models with their attributes. Views subscribe to changes.
import { get, listOf } from './api.js';
import { notifyError } from './ui.js';

/** @typedef {{uuid:string,name:string,label:string,type:string,rw:string,unit:string,description:string,rule:any}} Attr */
/** @typedef {{uuid:string,name:string,description:string,published:boolean,attributes:Attr[]}} Model */

export const state = {
  /** @type {Model[]} */
  models: [],
  loaded: false,
};

const listeners = new Set();
export function onModelsChanged(fn) { listeners.add(fn); return () => listeners.delete(fn); }
function emit() { for (const fn of listeners) fn(state.models); }

/** The attributes of one model, in model order. */
export async function fetchAttributes(uuid) {
  const d = await get('schema/properties/list', { schema_uuid: uuid, current: 1, size: 1000 });
  return listOf(d);
}

/** Reload every model and its attributes. */
export async function loadModels() {
  const list = listOf(await get('schema/list'));
  const models = await Promise.all(list.map(async (m) => ({
    uuid: m.uuid,
    name: m.name,
    description: m.description || '',
    published: Boolean(m.published),
    attributes: Array.isArray(m.attributes) ? m.attributes : await fetchAttributes(m.uuid),
  })));
  state.models = models;
  state.loaded = true;
  emit();
  return models;
}

/** Reload one model (detail + attributes) in place. */
export async function reloadModel(uuid) {
  const [d, attrs] = await Promise.all([get('schema/detail', { uuid }), fetchAttributes(uuid)]);
  const m = { uuid: d.uuid || uuid, name: d.name, description: d.description || '', published: Boolean(d.published), attributes: attrs };
  const i = state.models.findIndex((x) => x.uuid === uuid);
  if (i >= 0) state.models[i] = m; else state.models.push(m);
  emit();
  return m;
}

/**
 * After an action that succeeded, reload what it changed. A failed reload would leave the page showing
 * the data from before the action without a word, so it is shown as an error naming what could not be
 * reloaded, and not thrown: the action did happen, and the caller goes on to say so. A 401 is left to
 * the sign-out it already causes.
 */
async function reloadAfterAction(what, reload) {
  try {
    return await reload();
  } catch (e) {
    if (!(e && e.status === 401)) notifyError(e, `Reloading ${what} failed`);
    return undefined;
  }
}

/** reloadModel after an action on the model; a failure is shown, not thrown. */
export function reloadModelAfterAction(uuid) {
  const m = findModel(uuid);
  return reloadAfterAction(m ? `the model "${m.name}"` : `model ${uuid}`, () => reloadModel(uuid));
}

/** loadModels after an action that adds or changes models; a failure is shown, not thrown. */
export function loadModelsAfterAction() {
  return reloadAfterAction('the data models', loadModels);
}

export function findModel(uuid) { return state.models.find((m) => m.uuid === uuid); }

export function removeModel(uuid) {
  state.models = state.models.filter((m) => m.uuid !== uuid);
  emit();
}

export const NUMERIC = new Set(['INTEGER', 'FLOAT']);

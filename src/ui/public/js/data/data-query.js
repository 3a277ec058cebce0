// Data queries from the page: the data secret goes in the X-Api-Secret header, never in a URL.
import { ApiError, get, getSecret } from '../core/api.js';
import { noteServerDate } from '../core/time.js';

/**
 * The data secret as a request header. Never in the URL: proxies, browser history and server logs keep
 * URLs. A header carries printable ASCII only, so another secret cannot be sent from here.
 */
export function secretHeader(secret, path) {
  if (!/^[\x20-\x7e]*$/.test(secret)) {
    throw new ApiError(0, 'The data secret has characters an HTTP header cannot carry: make an ASCII secret the first [main] dataschema_secrets value', path);
  }
  return { 'X-Api-Secret': secret };
}

/** Query a data endpoint with the secret; on 401 refresh the secret once (it may have been rotated). */
export async function queryData(path, params) {
  const ask = async (force) => get(path, params, { auth: false, headers: secretHeader(await getSecret(force), path), onResponse: noteServerDate });
  try {
    return await ask(false);
  } catch (e) {
    if (e.status !== 401) throw e;
    return ask(true);
  }
}

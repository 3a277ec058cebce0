/**
 * Every error the service raises on purpose. Each class carries a stable `code` string and the HTTP
 * status it maps to, and declares the headers and `data` its answer carries, so the HTTP layer turns any
 * of them into the contract's envelope `{code: status, msg: message, data}` without knowing where it
 * came from. Anything that is not an EdgeError is a bug and answers 500.
 *
 * The classes at the end answer no request: they carry a stable `code` but no HTTP status (ListenError,
 * UsageError: the CLI exits with 1 or 2; WorkerLostError: the dispatcher turns it into rule errors).
 * docs/errors.md lists every code.
 */
export class EdgeError extends Error {
  readonly code: string;
  readonly status: number;

  constructor(message: string, code: string, status: number, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.status = status;
  }

  /** The envelope's `data`: null unless the error has something the client needs. */
  get data(): unknown {
    return null;
  }

  /** Headers the answer must carry besides the JSON ones (`Retry-After`, `Allow`). */
  headers(): Record<string, string> {
    return {};
  }
}

function retryAfter(retryAfterS: number): Record<string, string> {
  return retryAfterS > 0 ? { 'Retry-After': String(Math.ceil(retryAfterS)) } : {};
}

/** A parameter, field or body broke a rule. The message names it and the rule. */
export class InvalidArgumentError extends EdgeError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, 'ERR_INVALID_ARGUMENT', 400, options);
    this.name = 'InvalidArgumentError';
  }
}

/** Missing or wrong secret or token. */
export class AuthError extends EdgeError {
  constructor(message: string) {
    super(message, 'ERR_AUTH', 401);
    this.name = 'AuthError';
  }
}

export class NotFoundError extends EdgeError {
  constructor(message: string) {
    super(message, 'ERR_NOT_FOUND', 404);
    this.name = 'NotFoundError';
  }
}

/**
 * The Host header names a host that is not in `[plugin.http_server] allowed_hosts`: the request was meant
 * for another server, or comes from a page whose name was rebound to this address (DNS rebinding).
 */
export class MisdirectedRequestError extends EdgeError {
  constructor(message: string) {
    super(message, 'ERR_MISDIRECTED_REQUEST', 421);
    this.name = 'MisdirectedRequestError';
  }
}

/** The path exists, the method does not: `allowed` becomes the `Allow` header. */
export class MethodNotAllowedError extends EdgeError {
  constructor(
    message: string,
    readonly allowed: readonly string[],
  ) {
    super(message, 'ERR_METHOD_NOT_ALLOWED', 405);
    this.name = 'MethodNotAllowedError';
  }

  override headers(): Record<string, string> {
    return { Allow: this.allowed.join(', ') };
  }
}

/** The object is in the wrong state for the operation, such as a model that is not published. */
export class StateError extends EdgeError {
  constructor(message: string) {
    super(message, 'ERR_STATE', 409);
    this.name = 'StateError';
  }
}

export class PayloadTooLargeError extends EdgeError {
  constructor(message: string) {
    super(message, 'ERR_PAYLOAD_TOO_LARGE', 413);
    this.name = 'PayloadTooLargeError';
  }
}

export class TooManyRequestsError extends EdgeError {
  readonly retryAfterS: number;

  constructor(message: string, retryAfterS: number) {
    super(message, 'ERR_TOO_MANY_REQUESTS', 429);
    this.name = 'TooManyRequestsError';
    this.retryAfterS = retryAfterS;
  }

  override headers(): Record<string, string> {
    return retryAfter(this.retryAfterS);
  }
}

/** The request line is longer than `[plugin.http_server] url_bytes_max`. */
export class UriTooLongError extends EdgeError {
  constructor(message: string) {
    super(message, 'ERR_URI_TOO_LONG', 414);
    this.name = 'UriTooLongError';
  }
}

/** The request needs something this running service does not offer (the live WebSocket on the node transport). */
export class NotImplementedError extends EdgeError {
  constructor(message: string) {
    super(message, 'ERR_NOT_IMPLEMENTED', 501);
    this.name = 'NotImplementedError';
  }
}

/** Overloaded (a full queue) or unable to write (a read-only store). Retrying later may succeed. */
export class UnavailableError extends EdgeError {
  readonly retryAfterS: number;

  constructor(message: string, retryAfterS = 1, options?: ErrorOptions, code = 'ERR_UNAVAILABLE') {
    super(message, code, 503, options);
    this.name = 'UnavailableError';
    this.retryAfterS = retryAfterS;
  }

  override headers(): Record<string, string> {
    return retryAfter(this.retryAfterS);
  }
}

/**
 * A push that met a read-only store (contract 19): 503 with Retry-After, and in `data` which payload lines
 * are kept, so a client resends exactly the others and stores each record once.
 */
export class PushPartlyKeptError extends UnavailableError {
  constructor(
    message: string,
    private readonly kept: { accepted: number; failed: number; kept: number[] },
  ) {
    super(message, 5, undefined, 'ERR_STORE_READ_ONLY');
    this.name = 'PushPartlyKeptError';
  }

  override get data(): { accepted: number; failed: number; kept: number[] } {
    return this.kept;
  }
}

/**
 * A push some of whose payloads a model refused for a moment (its writes held by an import, its log
 * closed while a restore swaps it in, its write queue full), answered as PushPartlyKeptError is: 503
 * with the refusal's Retry-After and the kept lines in `data`, so a client resends exactly the others.
 */
export class PushRefusedError extends UnavailableError {
  constructor(
    message: string,
    retryAfterS: number,
    private readonly kept: { accepted: number; failed: number; kept: number[] },
  ) {
    super(message, retryAfterS, undefined, 'ERR_PUSH_REFUSED');
    this.name = 'PushRefusedError';
  }

  override get data(): { accepted: number; failed: number; kept: number[] } {
    return this.kept;
  }
}

/** A metadata file (models.json, rules.json, inends.json, credentials) could not be replaced: nothing changed. */
export class MetadataWriteError extends UnavailableError {
  constructor(file: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException)?.code;
    const why = code === 'ENOSPC' ? 'disk full (ENOSPC)' : `I/O error (${code ?? (cause as Error)?.message ?? 'unknown'})`;
    super(`could not write ${file}: ${why}; the change was not made, try again when the disk is writable`, 5, { cause }, 'ERR_METADATA_WRITE');
    this.name = 'MetadataWriteError';
  }
}

/** A model's log refuses writes after a disk-full or I/O error, until space is back. */
export class StoreReadOnlyError extends UnavailableError {
  constructor(modelId: string, reason: string, options?: ErrorOptions) {
    super(`store read-only for model ${modelId}: ${reason}`, 5, options, 'ERR_STORE_READ_ONLY');
    this.name = 'StoreReadOnlyError';
  }
}

/**
 * The port is taken or the address is not ours, uWS refused the TLS files, or `transport = uws` and uWS
 * does not load: a start-up problem, which the CLI reports without a stack. Not an EdgeError: no request is being answered.
 */
export class ListenError extends Error {
  readonly code = 'ERR_LISTEN';

  constructor(message: string) {
    super(message);
    this.name = 'ListenError';
  }
}

/** The command line is wrong: the CLI prints the message and its usage, and exits with 2. */
export class UsageError extends Error {
  readonly code = 'ERR_USAGE';

  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * A bench run that could not finish (the service did not start or exited, a call it made failed, no room
 * on the disk): `edge-datacenter bench` prints the message and exits 1, without a stack.
 */
export class BenchError extends Error {
  readonly code = 'ERR_BENCH';

  constructor(message: string) {
    super(message);
    this.name = 'BenchError';
  }
}

/**
 * A script worker was ended while it ran a task: the hard time limit, or a crash of the worker. The
 * dispatcher reruns the batch one (payload, rule) pair at a time and reports the pair that failed as a
 * rule error; reaching the HTTP layer (a compile on a lost worker) it is a 500 like any bug.
 */
export class WorkerLostError extends Error {
  readonly code = 'ERR_WORKER_LOST';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WorkerLostError';
  }
}

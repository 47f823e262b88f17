/**
 * A failure of the host itself, not of what a caller asked: background work (schedulers, workers,
 * installers, the plugin loader, the engine) and start-up wiring throw these, where a request
 * handler throws a DomainError. A fault is never the client's to fix, so the one exception filter
 * answers it like any unknown error, 500 `internal_error` with a correlation id and no message, and
 * its message only reaches the logs.
 *
 * `fault` names the kind stably for logs and tests. It is deliberately not called `code`: the run
 * engine, the activity ledger, the tool executor and tracing read any error's string `code` as the
 * protocol error code to record, and a fault must leave them at their defaults (`node_failed`...).
 */
export class InternalFault extends Error {
  constructor(
    readonly fault: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The host is put together wrong: a registration made twice, a route without scopes, a schema or
 * metric name nobody declared, a proto the code does not match, a service used before what it
 * needs exists. A code fix, never a retry; most stop the start.
 */
export class WiringFault extends InternalFault {
  constructor(message: string, options?: { cause?: unknown }) {
    super('wiring', message, options);
  }
}

/**
 * Something the host keeps consistent is not: a claimed row gone, a value that cannot be
 * canonicalized, a request that reached a handler without its principal. Retrying seldom helps; the
 * message says which invariant broke.
 */
export class InvariantViolation extends InternalFault {
  constructor(message: string, options?: { cause?: unknown }) {
    super('invariant', message, options);
  }
}

/**
 * An extension answered outside its contract: a plugin's tool source, goal judge or portable kind,
 * an MCP server. The host degrades that extension's contribution and keeps serving the rest.
 */
export class ExtensionFault extends InternalFault {
  constructor(message: string, options?: { cause?: unknown }) {
    super('extension', message, options);
  }
}

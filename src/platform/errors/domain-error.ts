/**
 * A failure the protocol knows by name. Every error that leaves the host is written by the one
 * exception filter as `{ error, message, details? }`; domain code throws this (or a subclass).
 */
export class DomainError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export class NotFoundError extends DomainError {
  constructor(message = 'The resource does not exist.', details?: Record<string, unknown>) {
    super('not_found', 404, message, details);
  }
}

export class ValidationError extends DomainError {
  constructor(message: string, details?: Record<string, unknown>) {
    super('validation_error', 400, message, details);
  }
}

/** 422: the request was understood but is refused on its meaning. */
export class UnprocessableError extends DomainError {
  constructor(code: string, message: string, details?: Record<string, unknown>) {
    super(code, 422, message, details);
  }
}

export class ConflictError extends DomainError {
  constructor(code: string, message: string, details?: Record<string, unknown>) {
    super(code, 409, message, details);
  }
}

export class ForbiddenError extends DomainError {
  constructor(message = 'The credential does not grant this action.', details?: Record<string, unknown>) {
    super('forbidden', 403, message, details);
  }
}

export class UnauthenticatedError extends DomainError {
  constructor(message = 'A valid credential is required.', code = 'unauthenticated') {
    super(code, 401, message);
  }
}

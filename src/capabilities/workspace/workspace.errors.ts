import { DomainError } from '../../platform/errors/domain-error';

/** A stale `If-Match` (or `If-None-Match: *` on a file that exists): RFC 0059 §C. `currentVersion` 0: the file does not exist. */
export class WorkspaceConflictError extends DomainError {
  constructor(currentVersion: number, message: string) {
    super('workspace_conflict', 409, message, { currentVersion });
  }
}

/** Content over `maxFileBytes`, or a new file past `maxFiles` (the advertised ceilings). */
export class WorkspaceTooLargeError extends DomainError {
  constructor(message: string, details: Record<string, unknown>) {
    super('workspace_too_large', 413, message, details);
  }
}

/** The store is switched off (OPENWOP_WORKSPACE=false): every route answers as the spec says a host without it does. */
export class WorkspaceNotProvidedError extends DomainError {
  constructor() {
    super('capability_not_provided', 501, 'This host does not serve the agent workspace (capabilities.workspace is not advertised).', { capability: 'workspace' });
  }
}

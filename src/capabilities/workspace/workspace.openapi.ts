import { NEXT_CURSOR_PROPERTY } from '../../platform/pagination/page-query';
import { WORKSPACE_PATH_PATTERN } from './workspace-path';

/** OpenAPI shapes of the workspace capability (a file itself is the protocol's WorkspaceFile component). */

/** A list row: `workspace-file.schema.json` without `content` (RFC 0059 §C: metadata only). */
export const WORKSPACE_FILE_META = {
  type: 'object',
  additionalProperties: false,
  required: ['path', 'contentType', 'version', 'etag', 'updatedAt'],
  properties: {
    path: { type: 'string', pattern: WORKSPACE_PATH_PATTERN.source },
    contentType: { type: 'string' },
    version: { type: 'integer', minimum: 1 },
    etag: { type: 'string', description: 'Opaque: send it back as If-Match.' },
    updatedAt: { type: 'string', format: 'date-time' },
  },
};

export const WORKSPACE_FILE_LIST = {
  type: 'object',
  required: ['files', 'nextCursor'],
  properties: { files: { type: 'array', items: WORKSPACE_FILE_META }, nextCursor: NEXT_CURSOR_PROPERTY },
};

export const PATH_PARAM = {
  name: 'path',
  description: 'The file path (RFC 0059): 1-256 letters, digits or . _ / -, starting with a letter or digit; no "..", no empty or "." segment, no trailing "/". Its slashes may be sent as they are or as %2F.',
  schema: { type: 'string', pattern: WORKSPACE_PATH_PATTERN.source },
};

export const IF_MATCH_HEADER = {
  name: 'If-Match',
  required: false,
  description: 'Optimistic concurrency: the etag the caller last read (or *: the file must exist). A stale one is 409 workspace_conflict with details.currentVersion (0: no such file).',
  schema: { type: 'string', maxLength: 255 },
};

export const IF_NONE_MATCH_HEADER = {
  name: 'If-None-Match',
  required: false,
  description: '* creates only: 409 workspace_conflict when the file exists.',
  schema: { type: 'string', maxLength: 255 },
};

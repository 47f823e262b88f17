import { NodeExecutionError } from '@openwop-host/plugin-sdk';
import { Logger } from '@nestjs/common';
import { AuthorSchemas, SchemaNotCompiled } from '../../../platform/schemas/author-schemas';
import type { CatalogEntry } from '../../tool-catalog';

const log = new Logger('core.tool');

/**
 * A `core.tool` call's arguments against the tool's declared `inputSchema` (compiled as an author
 * schema: its patterns on the linear-time engine), before the dispatch decision and the call: a
 * mismatch fails the node `invalid_arguments` with every problem in its details, and nothing is
 * called. A schema the host cannot compile (a remote source's, with a pattern that needs
 * backtracking, say) is left to the source, which checks its own arguments.
 */
export function checkToolArguments(entry: CatalogEntry, args: Record<string, unknown>): void {
  const schema = entry.descriptor.inputSchema;
  if (!schema || typeof schema !== 'object') return;
  let problems: Array<{ path: string; message: string }>;
  try {
    problems = AuthorSchemas.shared().compile(schema)(args);
  } catch (e) {
    if (!(e instanceof SchemaNotCompiled)) throw e;
    log.debug({ msg: 'tool inputSchema not checked by the host: it does not compile as an author schema', toolId: entry.descriptor.toolId });
    return;
  }
  if (!problems.length) return;
  const listed = problems.slice(0, 20).map((p) => ({ path: `/arguments${p.path}`, message: p.message }));
  throw new NodeExecutionError(
    'invalid_arguments',
    `The arguments do not satisfy the inputSchema of ${entry.descriptor.toolId}: ${listed.map((p) => `${p.path} ${p.message}`).join('; ')}`,
    { toolId: entry.descriptor.toolId, problems: listed },
  );
}

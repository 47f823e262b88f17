import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionError, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';

/**
 * `core.artifact {name, contentType?, content, artifactType?, summary?}`: stores `content` (templated
 * like every config: `{{inputs.*}}`, `{{nodes.<id>.*}}`) as a run artifact and answers its
 * reference as outputs (`artifactId`, `name`, `contentType`, `sizeBytes`). A string is stored as
 * UTF-8 (default `text/plain; charset=utf-8`), an object or array as its JSON text (default
 * `application/json`). The built-in way for a chain (and a test or example) to produce one.
 */
@Injectable()
@NodeExecutor({ typeId: 'core.artifact', replayPolicy: 'idempotent' })
export class CoreArtifactExecutor implements NodeExecutorProvider {
  validateConfig(config: Record<string, unknown>): string[] {
    const problems: string[] = [];
    if (typeof config.name !== 'string' || !config.name.trim() || config.name.length > 255) problems.push('core.artifact config.name must be a string of 1-255 characters');
    if (config.contentType !== undefined && typeof config.contentType !== 'string') problems.push('core.artifact config.contentType must be a string');
    if (config.content === undefined || config.content === null || !['string', 'object'].includes(typeof config.content)) problems.push('core.artifact config.content must be a string, an object or an array');
    for (const k of ['artifactType', 'summary'] as const) if (config[k] !== undefined && typeof config[k] !== 'string') problems.push(`core.artifact config.${k} must be a string`);
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    if (!ctx.artifacts) throw new NodeExecutionError('artifact_unsupported', 'This host gives node executors no artifact store.');
    const c = ctx.config;
    const ref = await ctx.artifacts.put({
      name: c.name as string,
      contentType: typeof c.contentType === 'string' ? c.contentType : undefined,
      data: c.content as string | Record<string, unknown>,
      artifactType: typeof c.artifactType === 'string' ? c.artifactType : undefined,
      summary: typeof c.summary === 'string' ? c.summary : undefined,
    });
    return { outputs: { artifactId: ref.artifactId, name: ref.name, contentType: ref.contentType, sizeBytes: ref.sizeBytes } };
  }
}

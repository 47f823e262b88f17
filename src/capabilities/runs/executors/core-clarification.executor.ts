import { Injectable } from '@nestjs/common';
import { NodeExecutionContext, NodeExecutionResult, NodeExecutor, NodeExecutorProvider } from '@openwop-host/plugin-sdk';
import { AuthorSchemas } from '../../../platform/schemas/author-schemas';
import type { NodeConfigProblem, StructuredConfigCheck } from '../chain-pack-checks';

const MAX_QUESTIONS = 50;
const ID = /^[A-Za-z0-9_.-]{1,64}$/;

interface Question {
  id: string;
  question: string;
  schema?: Record<string, unknown>;
}

/** The resume schema of a clarification: `{answers: {<questionId>: <answer>}}`, every question answered. */
export function clarificationResumeSchema(questions: Question[]): Record<string, unknown> {
  return {
    type: 'object',
    required: ['answers'],
    properties: {
      answers: {
        type: 'object',
        required: questions.map((q) => q.id),
        properties: Object.fromEntries(questions.map((q) => [q.id, q.schema ?? { type: 'string', minLength: 1, maxLength: 10_000 }])),
        additionalProperties: false,
      },
    },
    additionalProperties: false,
  };
}

/**
 * `core.clarification {title?, questions: [{id, question, schema?}]}`: suspends the run in
 * `waiting-input` on a `clarification` interrupt; resolved with `{answers: {<id>: answer}}` (each
 * answer checked against its question's `schema`, default a non-empty string), the node outputs the
 * answers. One round per execution of the node. A question's schema is the workflow author's: it is
 * compiled when the chain is installed and when a run of it is created, its patterns matched on the
 * linear-time engine (one that needs backtracking is refused there).
 */
@Injectable()
@NodeExecutor({ typeId: 'core.clarification', replayPolicy: 'idempotent' })
export class CoreClarificationExecutor implements NodeExecutorProvider, StructuredConfigCheck {
  validateConfig(config: Record<string, unknown>): string[] {
    return this.configProblems(config).map((p) => (p.path ? `config${p.path}: ${p.message}` : p.message));
  }

  /** The config's problems, each question schema compiled as an author schema (a problem at its keyword's path). */
  configProblems(config: Record<string, unknown>): NodeConfigProblem[] {
    const invalid = (message: string): NodeConfigProblem => ({ path: '', code: 'invalid_node_config', message });
    const qs = config.questions;
    if (!Array.isArray(qs) || !qs.length || qs.length > MAX_QUESTIONS) return [invalid(`core.clarification needs config.questions, 1 to ${MAX_QUESTIONS} of {id, question, schema?}`)];
    const problems: NodeConfigProblem[] = [];
    const seen = new Set<string>();
    qs.forEach((q: Record<string, unknown>, i) => {
      if (!q || typeof q !== 'object' || typeof q.id !== 'string' || !ID.test(q.id)) problems.push(invalid(`config.questions[${i}].id must match ${ID}`));
      else if (seen.has(q.id)) problems.push(invalid(`config.questions[${i}].id "${q.id}" is repeated`));
      else seen.add(q.id);
      if (!q || typeof q.question !== 'string' || !q.question) problems.push(invalid(`config.questions[${i}].question must be a non-empty string`));
      if (q && q.schema !== undefined && (typeof q.schema !== 'object' || q.schema === null || Array.isArray(q.schema))) problems.push(invalid(`config.questions[${i}].schema must be a JSON Schema object`));
      else if (q && q.schema !== undefined) {
        for (const p of AuthorSchemas.shared().problems(q.schema)) problems.push({ path: `/questions/${i}/schema${p.path}`, code: 'invalid_schema', message: p.message });
      }
    });
    return problems;
  }

  async execute(ctx: NodeExecutionContext): Promise<NodeExecutionResult> {
    const questions = (ctx.config.questions as Question[]).map((q) => ({ id: q.id, question: q.question, ...(q.schema ? { schema: q.schema } : {}) }));
    const title = typeof ctx.config.title === 'string' && ctx.config.title ? ctx.config.title : `Answer the questions of step ${ctx.nodeId}`;
    const value = (await ctx.interrupt({ kind: 'clarification', title, resumeSchema: clarificationResumeSchema(questions), data: { questions } })) as { answers?: Record<string, unknown> };
    return { outputs: { answers: value?.answers ?? {} } };
  }
}

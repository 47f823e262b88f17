import { Injectable } from '@nestjs/common';
import { GoalJudge, GoalJudgeInput, GoalJudgeProvider, GoalVerdict } from '@openwop-host/plugin-sdk';
import { AuthorSchemas, SchemaNotCompiled, SchemaProblem } from '../../../platform/schemas/author-schemas';

/** Statuses of a run whose output may satisfy a goal (a failed or cancelled run never does). */
const SUCCESSFUL = new Set(['completed', 'succeeded', 'reported']);

/**
 * The built-in `host` judge: a goal's completion criteria are a JSON Schema, and a run satisfies the
 * goal when it finished successfully and its output validates. Deterministic, so confidence is 1.
 * The criteria are the goal author's: compiled as every author schema is (patterns on the
 * linear-time engine, those that need backtracking refused when the goal is written).
 */
@Injectable()
@GoalJudge({ check: 'host' })
export class HostSchemaJudge implements GoalJudgeProvider {
  private readonly schemas = AuthorSchemas.shared();

  /** Why a criteria schema cannot be used (used to refuse a goal at create time): its first problem, with its path in the schema. */
  compileError(criteria: Record<string, unknown>): SchemaProblem | undefined {
    return this.schemas.problems(criteria)[0];
  }

  evaluate(input: GoalJudgeInput): GoalVerdict {
    const criteria = input.goal.criteria;
    if (!criteria) return { satisfied: false, confidence: 1 };
    if (!SUCCESSFUL.has(input.run.status) || input.run.output === undefined) return { satisfied: false, confidence: 1 };
    try {
      return { satisfied: this.schemas.compile(criteria)(input.run.output).length === 0, confidence: 1 };
    } catch (e) {
      // Criteria stored before they were checked this way: nothing satisfies them.
      if (e instanceof SchemaNotCompiled) return { satisfied: false, confidence: 1 };
      throw e;
    }
  }
}

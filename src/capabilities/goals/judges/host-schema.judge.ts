import { Injectable } from '@nestjs/common';
import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { GoalJudge, GoalJudgeInput, GoalJudgeProvider, GoalVerdict } from '@openwop-host/plugin-sdk';

/** Statuses of a run whose output may satisfy a goal (a failed or cancelled run never does). */
const SUCCESSFUL = new Set(['completed', 'succeeded', 'reported']);

/**
 * The built-in `host` judge: a goal's completion criteria are a JSON Schema, and a run satisfies the
 * goal when it finished successfully and its output validates. Deterministic, so confidence is 1.
 */
@Injectable()
@GoalJudge({ check: 'host' })
export class HostSchemaJudge implements GoalJudgeProvider {
  private readonly ajv: Ajv2020;
  private readonly cache = new Map<string, ValidateFunction>();

  constructor() {
    this.ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    addFormats(this.ajv);
  }

  /** The compile error of a criteria schema (used to refuse a goal at create time), if any. */
  compileError(criteria: Record<string, unknown>): string | undefined {
    try {
      this.compile(criteria);
      return undefined;
    } catch (e) {
      return (e as Error).message;
    }
  }

  evaluate(input: GoalJudgeInput): GoalVerdict {
    const criteria = input.goal.criteria;
    if (!criteria) return { satisfied: false, confidence: 1 };
    if (!SUCCESSFUL.has(input.run.status) || input.run.output === undefined) return { satisfied: false, confidence: 1 };
    return { satisfied: this.compile(criteria)(input.run.output) === true, confidence: 1 };
  }

  private compile(criteria: Record<string, unknown>): ValidateFunction {
    const key = JSON.stringify(criteria);
    let fn = this.cache.get(key);
    if (!fn) {
      // A criteria schema may carry an $id; compile it without registering it globally.
      const { $id: _id, ...schema } = criteria;
      fn = this.ajv.compile(schema);
      if (this.cache.size > 1000) this.cache.clear();
      this.cache.set(key, fn);
    }
    return fn;
  }
}

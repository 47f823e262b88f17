import { UnprocessableError, ValidationError } from '../../platform/errors/domain-error';
import { AuthorSchemas, AuthorValidator, SchemaNotCompiled } from '../../platform/schemas/author-schemas';

/** A run's overrides of its chain's deferred parameters (RFC 0124), checked where its inputs are. */
export { checkDeferredOverrides } from './chain-deferred-parameters';

/**
 * A run's inputs against the parameters its chain declares (the chain's input JSON Schema, compiled as
 * an author schema, its patterns on the linear-time engine): every problem at once, 400
 * `validation_error` at its `/inputs` path, so nothing is written. A chain that declares none takes any
 * inputs; one whose parameters do not compile cannot be started (422 `workflow_invalid`).
 */
export function checkRunInputs(parameters: Record<string, unknown> | undefined, inputs: Record<string, unknown> | undefined): void {
  if (!parameters) return;
  let validate: AuthorValidator;
  try {
    validate = AuthorSchemas.shared().compile(parameters);
  } catch (e) {
    if (!(e instanceof SchemaNotCompiled)) throw e;
    throw new UnprocessableError('workflow_invalid', 'The workflow declares input parameters that are not a JSON Schema this host can check.', {
      problems: e.problems.map((p) => ({ path: `/parameters${p.path}`, message: p.message })),
    });
  }
  const problems = validate(inputs ?? {});
  if (problems.length) {
    throw new ValidationError('inputs do not satisfy the parameters the workflow declares.', {
      field: 'inputs',
      problems: problems.slice(0, 50).map((p) => ({ path: `/inputs${p.path}`, message: p.message })),
    });
  }
}

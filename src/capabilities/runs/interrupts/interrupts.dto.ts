import { ApiProperty } from '@nestjs/swagger';
import { IsDefined } from '../../../platform/http/dto-validation';
import { ValidationError } from '../../../platform/errors/domain-error';

/** The body that resolves an interrupt by run or by gate id: `{resumeValue}`. */
export class ResolveInterruptBody {
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'Checked against the interrupt’s `resumeSchema`: an approval takes `{action: accept|reject, voter?, feedback?}` (a quorum counts distinct voters, compared NFKC-normalized, trimmed and case-folded; default voter: the credential’s principal; another voter is acting-as and needs `approvals:act-as` or the gate’s `namedVoters.recordedBy` scope, else 403), a clarification `{answers: {<questionId>: answer}}`, an external event the event object (its correlation fields must match).',
  })
  @IsDefined()
  resumeValue: unknown;
}

/** The body of the signed-token route, checked after the token (an unknown token is 404 whatever the body). */
export function tokenResumeValue(body: unknown): unknown {
  const b = body as Record<string, unknown> | null;
  if (!b || typeof b !== 'object' || Array.isArray(b) || !('resumeValue' in b)) throw new ValidationError('The body needs resumeValue.', { field: 'resumeValue' });
  const extra = Object.keys(b).filter((k) => k !== 'resumeValue');
  if (extra.length) throw new ValidationError(`Unknown body fields: ${extra.join(', ')}.`, { fields: extra });
  return b.resumeValue;
}

import { Injectable } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsObject, IsOptional, IsString, Matches, MaxLength } from '../../../platform/http/dto-validation';
import { DataSource } from 'typeorm';
import { NotFoundError, UnprocessableError, ValidationError } from '../../../platform/errors/domain-error';
import type { Principal } from '../../../platform/identity/principal';
import { canonicalJson } from '../../../platform/artifacts/artifact-registry.service';
import { expandDeferred } from '../chain-deferred-parameters';
import { RunForkService } from '../replay/run-fork.service';
import { RunCreationService } from '../run-creation.service';
import { findRun } from '../run-snapshot';
import { DEFERRED_SEAM_SOURCES } from '../workflow-resolver.service';
import { settledStatus } from './settled-status';

export class DeferredExpandBody {
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'A chain ({chainId?, parameters, dag?}) to expand in deferred mode; answered with the expansion.' })
  @IsOptional()
  @IsObject()
  chain?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'A chain of the seam (conformance.deferred, conformance.deferred-sensitive) to expand, run and (with fork) fork.' })
  @IsOptional()
  @IsString()
  @Matches(/^[a-z][a-zA-Z0-9._-]{0,255}$/)
  chainId?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'The author (drop-time) values of the chain parameters.' })
  @IsOptional()
  @IsObject()
  params?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Per-run overrides: the run\'s configurable, by bare parameter name.' })
  @IsOptional()
  @IsObject()
  override?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'Also fork the run (a replay from its start) and answer what the fork bound.' })
  @IsOptional()
  @IsBoolean()
  fork?: boolean;

  @ApiPropertyOptional({ description: 'The sensitive parameter the credentialRef is supplied for.' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  sensitiveParam?: string;

  @ApiPropertyOptional({ description: 'The per-run credential reference of the sensitive parameter.' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  credentialRef?: string;
}

/**
 * `POST /v1/host/sample/chain/deferred-expand` (workflow-chain-deferred-parameters, workflow-variable-format; the
 * route is WorkflowSeamsController's): RFC
 * 0124 deferred-parameter expansion, witnessed through the real expander and real runs.
 * - `{chain: {parameters, dag?}, params?}`: the chain's deferred expansion (`variables[]` with `format`, nodes,
 *   `promptVariables`, `configurableSchema`).
 * - `{chainId, params?, override?, fork?}`: runs the seam chain's expansion (its author values are the seam's; `params`
 *   must agree with them) with `configurable = override`, and with `fork` forks that run from its start: answers
 *   `{runId, resolved, forkRunId?, forkResolved?, contentTrust}`, each `resolved` being what the prompt slot of the
 *   first parameter composed with in that run.
 * - `{chainId, sensitiveParam, credentialRef}`: runs the sensitive chain with the reference as the parameter's
 *   per-run value: answers `{runId, composed}` (the composed prompt, the slot redacted to the reference).
 */
@Injectable()
export class DeferredExpandSeam {
  constructor(
    private readonly creation: RunCreationService,
    private readonly forks: RunForkService,
    private readonly ds: DataSource,
  ) {}

  async expand(p: Principal, body: DeferredExpandBody): Promise<Record<string, unknown>> {
    if (body.chain) {
      if (body.chainId !== undefined) throw new ValidationError('Send either chain or chainId, not both.', { field: 'chainId' });
      const chainId = typeof body.chain.chainId === 'string' ? body.chain.chainId : 'seam.chain';
      const e = expandDeferred({ chainId, parameters: body.chain.parameters as Record<string, unknown> | undefined, dag: body.chain.dag as never }, body.params ?? {});
      return { chainId, nodes: e.dag.nodes, edges: e.dag.edges, variables: e.variables, promptVariables: e.promptVariables, configurableSchema: e.configurableSchema };
    }
    if (!body.chainId) throw new ValidationError('Send a chain to expand or the chainId of a seam chain.', { field: 'chainId' });
    const source = DEFERRED_SEAM_SOURCES[body.chainId];
    if (!source) throw new NotFoundError(`No seam chain "${body.chainId}".`, { chainId: body.chainId });
    for (const [k, v] of Object.entries(body.params ?? {})) {
      if (canonicalJson(v) !== canonicalJson(source.authorValues[k])) {
        throw new UnprocessableError('chain_parameter_invalid', `The seam chain ${body.chainId} is expanded with ${k} = ${JSON.stringify(source.authorValues[k])}; override it per run instead.`, { field: `params.${k}` });
      }
    }
    const expansion = expandDeferred(source.chain, source.authorValues);
    if (body.sensitiveParam !== undefined || body.credentialRef !== undefined) {
      const param = expansion.deferredParameters.find((d) => d.name === body.sensitiveParam && d.sensitive);
      if (!param) throw new ValidationError(`${body.chainId} has no sensitive parameter "${body.sensitiveParam ?? ''}".`, { field: 'sensitiveParam' });
      if (!body.credentialRef) throw new ValidationError('A sensitive parameter is supplied as a credentialRef.', { field: 'credentialRef' });
      const run = await this.runToEnd(p, body.chainId, { [param.name]: body.credentialRef });
      return { runId: run.runId, composed: run.compose.systemPrompt, contentTrust: run.compose.contentTrust };
    }
    const slot = expansion.promptVariables.find((b) => b.source === 'variable');
    if (!slot) throw new UnprocessableError('chain_parameter_invalid', `${body.chainId} binds no variable prompt slot.`);
    const run = await this.runToEnd(p, body.chainId, body.override ?? {});
    const out: Record<string, unknown> = { runId: run.runId, resolved: run.compose.variableBindings?.[slot.name], contentTrust: run.compose.contentTrust };
    if (body.fork) {
      const { answer } = await this.forks.fork(p, run.runId, { mode: 'replay', fromSeq: 0 });
      const forked = await this.outputsAtEnd(p, answer.runId, answer.status);
      out.forkRunId = answer.runId;
      out.forkResolved = forked.compose.variableBindings?.[slot.name];
    }
    return out;
  }

  private async runToEnd(p: Principal, workflowId: string, configurable: Record<string, unknown>): Promise<{ runId: string; compose: ComposeOutputs }> {
    const { snapshot } = await this.creation.create(p, { workflowId, configurable });
    return { runId: snapshot.runId, ...(await this.outputsAtEnd(p, snapshot.runId, snapshot.status)) };
  }

  private async outputsAtEnd(p: Principal, runId: string, status: string): Promise<{ compose: ComposeOutputs }> {
    const ended = await settledStatus(this.ds.manager, p, runId, status);
    const run = await findRun(this.ds.manager, p, runId);
    if (ended !== 'completed' || !run) throw new UnprocessableError('run_not_completed', `The seam's run ${runId} ended ${ended}.`, { runId, status: ended });
    return { compose: ((run.outputs ?? {}) as Record<string, ComposeOutputs>).compose ?? {} };
  }
}

interface ComposeOutputs {
  systemPrompt?: string;
  contentTrust?: string;
  variableBindings?: Record<string, string>;
}

import { Inject, Injectable } from '@nestjs/common';
import { Advertiser, CapabilityAdvertiser } from '../../platform/discovery/capability-advertiser';
import { EVENT_LOG_SCHEMA_VERSION } from './run-snapshot';
import { RUNS_SETTINGS, RunsSettings } from './runs.settings';
import { WorkflowResolver } from './workflow-resolver.service';
import { MAX_SUB_CHAIN_DEPTH } from './chain-subchains';
import { CapabilityToggles } from './seams/capability-toggles';

/**
 * The interrupt envelopes and limits, the RFC 0058 ceilings runs are checked against (`limits.maxRunDurationMs`, `maxLoopIterations`,
 * `maxBudgetCostUsd`) and, while the test seams are on, the conformance fixtures `POST /v1/runs`
 * resolves.
 */
@Injectable()
@Advertiser()
export class RunsAdvertiser implements CapabilityAdvertiser {
  // Sub-run attestation concerns whoever starts runs (a parent's child runs): a credential that cannot start one is not told.
  readonly scopedBy = { 'agents.subRunAttestation': ['runs:create'] };

  constructor(
    private readonly resolver: WorkflowResolver,
    @Inject(RUNS_SETTINGS) private readonly settings: RunsSettings,
    private readonly toggles: CapabilityToggles,
  ) {}

  advertise(): Record<string, unknown> {
    // The ctx.mcp fixture is listed too while it is served: v2 reads fixtures[] beside its mcp.client facet.
    const fixtures = [...this.resolver.fixtureIds(), ...this.resolver.mcpClientFixtureIds()];
    return {
      // Interrupts (openwop-interrupts): a node may ask a clarification (`clarification.request`,
      // resolved with its answers), one round per node execution, one envelope per turn.
      supportedEnvelopes: ['clarification.request'],
      // The event-log era every run is written with (each RunSnapshot carries the same value).
      eventLogSchemaVersion: EVENT_LOG_SCHEMA_VERSION,
      limits: { ...this.settings.limits, clarificationRounds: 1, envelopesPerTurn: 1 },
      // RFC 0115: GET /v1/runs/{runId} answers a strong ETag and honours If-None-Match with 304.
      restTransport: { conditionalRunGet: true },
      // Operator pause/resume (rest-endpoints.md POST /v1/runs/{runId}:pause, :resume).
      runs: { pauseResume: { supported: true, drainPolicies: ['immediate', 'drain-current-node'] } },
      // Run fork (replay.md, POST /v1/runs/{runId}:fork). No `sideEffectSuppression`: a tool's own
      // replayPolicy can still let it run live in a replay, so the whole-run guarantee is not claimed.
      replay: { supported: true, modes: ['replay', 'branch'] },
      // Workflow-chain packs (workflow-chain-packs.md): installed (checked at install: node types,
      // tools, child chains), resolved by chainId and run; `core.subWorkflow` honours `inputMapping`
      // (RFC 0022 §B) unless the test seam switched it off.
      // RFC 0124 deferred parameters: the deferred expansion of a chain (chain-deferred-parameters.ts) keeps its
      // parameters overridable per run (`configurable` by bare name, inherited by a fork), a sensitive one only as a
      // redacted prompt slot fed a credentialRef.
      // RFC 0133 sub-chains: a chain's `config.subChainRef` runs the referenced chain as a child run under its
      // tenant-scoped id (chain-subchains.ts), checked at install (unresolved, cycle, depth).
      workflowChainPacks: { supported: true, deferredParameters: { supported: true }, subChains: { supported: true, maxDepth: MAX_SUB_CHAIN_DEPTH } },
      subWorkflow: { inputMapping: this.toggles.enabled('subWorkflow.inputMapping') },
      // RFC 0063: core.subWorkflow's outputAttestation (checksum, approval before merge) is honoured.
      agents: { subRunAttestation: true },
      ...(fixtures.length ? { fixtures } : {}),
    };
  }
}

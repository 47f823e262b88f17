import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { PROPOSAL_KINDS, ProposalDraft, ProposalSynthesizer, ProposalSynthesizerProvider, RunToolTrace } from '@openwop-host/plugin-sdk';
import { collectExtensions, ExtensionMeta } from '../../../platform/plugins/extension-registry';
import { DataSource } from 'typeorm';
import { recentToolCalls, tenantsWithRecentToolCalls } from '../../../platform/events/tool-call-log';
import { HealthService } from '../../../platform/health/health.service';
import { systemPrincipal, TenantScope } from '../../../platform/identity/principal';
import { PeriodicTaskService } from '../../../platform/scheduler/periodic-task.service';
import { ProposalsService } from '../proposals.service';
import { PROPOSALS_SETTINGS, ProposalsSettings } from '../proposals.settings';

export interface SynthesisReport {
  /** Trace groups (tenant·workspace) examined. */
  scopes: number;
  runsExamined: number;
  drafts: number;
  created: string[];
  /** Drafts whose evidence already had a proposal (idempotent no-ops). */
  alreadyProposed: number;
  failures: Array<{ synthesizer: string; message: string }>;
}

/**
 * Runs the proposal synthesizers (extension point) over the tool traces of the event log, per
 * tenant·workspace, and persists their drafts as inert proposals. Scheduled host-wide through the
 * leased PeriodicTaskService; also triggerable for one tenant.
 */
@Injectable()
export class SynthesisService implements OnApplicationBootstrap {
  private readonly logger = new Logger('proposals.synthesis');
  private readonly synthesizers = new Map<string, ProposalSynthesizerProvider>();

  constructor(
    private readonly ds: DataSource,
    private readonly discovery: DiscoveryService,
    private readonly proposals: ProposalsService,
    private readonly tasks: PeriodicTaskService,
    private readonly health: HealthService,
    @Inject(PROPOSALS_SETTINGS) private readonly settings: ProposalsSettings,
  ) {}

  onApplicationBootstrap(): void {
    const found = collectExtensions<ExtensionMeta<typeof ProposalSynthesizer>, ProposalSynthesizerProvider>(this.discovery, { name: 'proposal synthesizer', metadataKey: ProposalSynthesizer.key, key: (meta) => meta.id });
    for (const { meta, provider } of found) this.synthesizers.set(meta.id, provider);
    if (this.settings.synthesis.enabled) {
      this.tasks.register({ name: 'proposals.synthesis', intervalMs: this.settings.synthesis.intervalMs, run: (signal) => this.runAll(signal).then(() => undefined) });
    }
  }

  synthesizerIds(): string[] {
    return [...this.synthesizers.keys()].sort();
  }

  /** One pass over every tenant with recent tool traces. */
  async runAll(signal: AbortSignal = new AbortController().signal): Promise<SynthesisReport> {
    const tenants = await tenantsWithRecentToolCalls(this.ds, this.settings.synthesis.lookbackHours);
    const total = emptyReport();
    for (const tenant of tenants) {
      if (signal.aborted) break;
      merge(total, await this.runFor({ tenant }, signal));
    }
    return total;
  }

  /**
   * One pass for a tenant: over its whole estate (each workspace separately) when the scope has no
   * workspace, else over that workspace only.
   */
  async runFor(scope: TenantScope, signal: AbortSignal = new AbortController().signal): Promise<SynthesisReport> {
    const report = emptyReport();
    const { lookbackHours, maxEvents } = this.settings.synthesis;
    const rows = await recentToolCalls(this.ds, { tenant: scope.tenant, workspace: scope.workspace, lookbackHours, limit: maxEvents });
    const byWorkspace = new Map<string, Map<string, RunToolTrace>>();
    for (const r of rows) {
      if (typeof r.toolId !== 'string' || !r.toolId) continue;
      const runs = byWorkspace.get(r.workspace) ?? new Map<string, RunToolTrace>();
      byWorkspace.set(r.workspace, runs);
      const trace = runs.get(r.runId) ?? { runId: r.runId, calls: [], startedAt: new Date(r.createdAt).toISOString() };
      runs.set(r.runId, trace);
      trace.calls.push({ toolId: r.toolId, sequence: r.sequence });
    }
    for (const [workspaceKey, runs] of byWorkspace) {
      if (signal.aborted) break;
      report.scopes += 1;
      report.runsExamined += runs.size;
      const workspace = workspaceKey || undefined;
      for (const [id, synthesizer] of this.synthesizers) {
        let drafts: ProposalDraft[];
        try {
          drafts = await synthesizer.synthesize({ tenant: scope.tenant, workspace, traces: [...runs.values()], signal });
          this.health.report(`proposal-synthesizer:${id}`, true);
        } catch (e) {
          // A failing synthesizer degrades only its own contribution.
          const message = (e as Error).message ?? String(e);
          report.failures.push({ synthesizer: id, message });
          this.health.report(`proposal-synthesizer:${id}`, false, message);
          this.logger.warn({ msg: 'proposal synthesizer failed', synthesizer: id, err: e });
          continue;
        }
        for (const draft of drafts) {
          report.drafts += 1;
          if (!isWellFormed(draft)) {
            report.failures.push({ synthesizer: id, message: 'returned a malformed draft' });
            continue;
          }
          const created = await this.proposals.create(systemPrincipal(scope.tenant, workspace), {
            kind: draft.kind,
            title: draft.title,
            rationale: draft.rationale,
            artifact: draft.artifact,
            sourceRunIds: draft.sourceRunIds,
            synthesizerModel: draft.synthesizerModel,
            evidenceKey: `${id}:${draft.evidenceKey}`,
          });
          if (created) report.created.push(created.id);
          else report.alreadyProposed += 1;
        }
      }
    }
    return report;
  }
}

function isWellFormed(d: ProposalDraft): boolean {
  return (
    PROPOSAL_KINDS.includes(d.kind) &&
    typeof d.artifact === 'object' && d.artifact !== null && !Array.isArray(d.artifact) &&
    typeof d.evidenceKey === 'string' && d.evidenceKey.length > 0 &&
    Array.isArray(d.sourceRunIds) && d.sourceRunIds.every((r) => typeof r === 'string' && r.length > 0)
  );
}

function emptyReport(): SynthesisReport {
  return { scopes: 0, runsExamined: 0, drafts: 0, created: [], alreadyProposed: 0, failures: [] };
}

function merge(into: SynthesisReport, r: SynthesisReport): void {
  into.scopes += r.scopes;
  into.runsExamined += r.runsExamined;
  into.drafts += r.drafts;
  into.created.push(...r.created);
  into.alreadyProposed += r.alreadyProposed;
  into.failures.push(...r.failures);
}

import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { ApprovalsController } from './approvals/approvals.controller';
import { ApprovalsService } from './approvals/approvals.service';
import { AutomationInstaller } from './automations/automation.installer';
import { AutomationRunnerService } from './automations/automation-runner.service';
import { InstalledArtifactsController } from './installed-artifacts.controller';
import { PromptTemplateInstaller } from './prompt-templates/prompt-template.installer';
import { PromptTemplatesService } from './prompt-templates/prompt-templates.service';
import { ProposalsAdvertiser } from './proposals.advertiser';
import { ProposalsController } from './proposals.controller';
import { ProposalsService } from './proposals.service';
import { PROPOSALS_SETTINGS, proposalsSettings } from './proposals.settings';
import { RepeatedToolSequenceSynthesizer } from './synthesis/repeated-tool-sequence.synthesizer';
import { SynthesisService } from './synthesis/synthesis.service';
import { ProposalEntity } from './proposal.entity';
import { ApprovalDecisionEntity, ApprovalEntity } from './approvals/approval.entity';
import { AutomationScheduleEntity } from './automations/automation-schedule.entity';
import { seamAliasesOf } from '../../platform/seams/seam-alias';

/**
 * Reviewable-learning proposals (RFC 0096) with their RFC 0051 approval gates, the built-in
 * synthesizer, and the prompt-template and automation artifact installers.
 */
@Module({
  imports: [DiscoveryModule],
  controllers: [ProposalsController, seamAliasesOf(ProposalsController), ApprovalsController, InstalledArtifactsController],
  providers: [
    { provide: PROPOSALS_SETTINGS, useFactory: (config: HostConfig) => proposalsSettings(config), inject: [HOST_CONFIG] },
    ProposalsService,
    ApprovalsService,
    SynthesisService,
    RepeatedToolSequenceSynthesizer,
    PromptTemplateInstaller,
    PromptTemplatesService,
    AutomationInstaller,
    AutomationRunnerService,
    ProposalsAdvertiser,
  ],
  exports: [ProposalsService, ApprovalsService, PromptTemplatesService],
})
export class ProposalsModule {
  static readonly entities = [ProposalEntity, ApprovalEntity, ApprovalDecisionEntity, AutomationScheduleEntity];
}

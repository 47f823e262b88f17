import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { ApprovalsModule } from '../approvals';
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
import { AutomationScheduleEntity } from './automations/automation-schedule.entity';
import { seamAliasesOf } from '../../platform/seams/seam-alias';

/**
 * Reviewable-learning proposals (RFC 0096), gated by the approvals capability in approval-gate mode, the built-in
 * synthesizer, and the prompt-template and automation artifact installers.
 */
@Module({
  imports: [DiscoveryModule, ApprovalsModule],
  controllers: [ProposalsController, seamAliasesOf(ProposalsController), InstalledArtifactsController],
  providers: [
    { provide: PROPOSALS_SETTINGS, useFactory: (config: HostConfig) => proposalsSettings(config), inject: [HOST_CONFIG] },
    ProposalsService,
    SynthesisService,
    RepeatedToolSequenceSynthesizer,
    PromptTemplateInstaller,
    PromptTemplatesService,
    AutomationInstaller,
    AutomationRunnerService,
    ProposalsAdvertiser,
  ],
  exports: [ProposalsService, PromptTemplatesService],
})
export class ProposalsModule {
  static readonly entities = [ProposalEntity, AutomationScheduleEntity];
}

/** The proposals capability as other capabilities see it: its module and its services. */
export { ProposalsModule } from './proposals.module';
export { ProposalsService } from './proposals.service';
export { PromptTemplatesService } from './prompt-templates/prompt-templates.service';

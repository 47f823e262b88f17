import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { PackPortableKind } from './kinds/pack.portable-kind';
import { PromptTemplatePortableKind } from './kinds/prompt-template.portable-kind';
import { SchedulePortableKind } from './kinds/schedule.portable-kind';
import { PortabilityAdvertiser } from './portability.advertiser';
import { PortabilityController } from './portability.controller';
import { PortabilityService } from './portability.service';
import { seamAliasesOf } from '../../platform/seams/seam-alias';

/** RFC 0098 portability: export/import bundles, with the built-in pack, prompt-template and schedule kinds. */
@Module({
  imports: [DiscoveryModule],
  controllers: [PortabilityController, seamAliasesOf(PortabilityController)],
  providers: [PortabilityService, PortabilityAdvertiser, PackPortableKind, PromptTemplatePortableKind, SchedulePortableKind],
  exports: [PortabilityService],
})
export class PortabilityModule {}

import { Module } from '@nestjs/common';
import { definePlugin } from '@openwop-host/plugin-sdk';
import { OpenApiToolSource } from './openapi-tool.source';
import { OpenApiToolsOptions, OPTIONS_SCHEMA } from './options';

export { OpenApiToolSource } from './openapi-tool.source';
export { projectDocument, buildRequest, dereference } from './openapi-projection';
export type { OpenApiToolsOptions, OpenApiDocumentOptions } from './options';

@Module({ providers: [OpenApiToolSource] })
export class OpenApiToolsModule {}

/**
 * `openwop.openapi-tools`: lists the operations of OpenAPI 3 documents as tools. Configure it in
 * OPENWOP_CONFIG under `plugins["openwop.openapi-tools"]` and load it with
 * `OPENWOP_PLUGINS=@openwop-host/openapi-tools`.
 */
export default definePlugin<OpenApiToolsOptions>({
  id: 'openwop.openapi-tools',
  version: '1.0.0',
  hostRange: '^1.0.0',
  description: 'Projects the operations of OpenAPI 3 documents as host-extension tools.',
  configSchema: OPTIONS_SCHEMA,
  module: OpenApiToolsModule,
});

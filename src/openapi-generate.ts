import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DataSource } from 'typeorm';
import { AppModule } from './app.module';
import { loadHostConfig } from './platform/config/host-config';
import { PluginStateStore } from './platform/plugins/plugin-state.store';
import { buildOpenApiDocument } from './platform/openapi/openapi-document';
import { OpenApiHolder } from './platform/openapi/openapi-holder';

/**
 * The document of the host itself (no plugins, no database): what `schemas/openapi.json` holds,
 * the document of a production host (no test seams). `testSeams: true` gives the document of a
 * conformance host, seams included (what `schemas/route-scopes.txt` lists, so seams are reviewed too).
 * Providers are constructed but never started, so no connection is made.
 */
export async function generateOpenApiDocument(options: { testSeams?: boolean } = {}): Promise<Record<string, unknown>> {
  const testSeams = options.testSeams ?? false;
  const config = loadHostConfig({ LOG_LEVEL: 'silent', OPENWOP_SCHEDULER_ENABLED: 'false', OPENWOP_TEST_SEAMS: String(testSeams) });
  const dataSource = new DataSource({ type: 'postgres', url: 'postgres://unused@127.0.0.1:1/unused' });
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot({ config, dataSource, pluginState: new PluginStateStore(), openApi: new OpenApiHolder(), plugins: [] }),
    new FastifyAdapter(),
    { logger: false, abortOnError: false },
  );
  try {
    return buildOpenApiDocument(app, { testSeams });
  } finally {
    await app.close();
  }
}

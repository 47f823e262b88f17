import { DynamicModule, Module } from '@nestjs/common';
import { MIGRATIONS } from '../migrations';
import { CAPABILITY_MODULES } from './capabilities';
import { ConsoleModule } from './console/console.module';
import { ENTITIES } from './entities';
import type { DatabaseSchema } from './platform/database/database-schema';
import { PlatformModule, PlatformOptions } from './platform/platform.module';
import type { LoadedPlugin } from './platform/plugins/plugin-loader';
import { GrpcTransportModule } from './transport/grpc/grpc.module';
import { McpTransportModule } from './transport/mcp/mcp-mount.module';

/** The host's database: every module's entities and the migrations, handed to the platform from here. */
export const HOST_SCHEMA: DatabaseSchema = { entities: ENTITIES, migrations: MIGRATIONS };

export interface AppOptions extends Omit<PlatformOptions, 'schema'> {
  plugins: LoadedPlugin[];
}

/** The host: the platform, every capability module, the gRPC and MCP transports, the operator console, and the plugins that loaded. */
@Module({})
export class AppModule {
  static forRoot(options: AppOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [PlatformModule.forRoot({ ...options, schema: HOST_SCHEMA }), ...CAPABILITY_MODULES, GrpcTransportModule, McpTransportModule.forRoot(options.config), ConsoleModule, ...options.plugins.map((p) => p.module)],
    };
  }
}

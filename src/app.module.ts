import { DynamicModule, Module } from '@nestjs/common';
import { CAPABILITY_MODULES } from './capabilities';
import { ConsoleModule } from './console/console.module';
import { PlatformModule, PlatformOptions } from './platform/platform.module';
import type { LoadedPlugin } from './platform/plugins/plugin-loader';
import { GrpcTransportModule } from './transport/grpc/grpc.module';

export interface AppOptions extends PlatformOptions {
  plugins: LoadedPlugin[];
}

/** The host: the platform, every capability module, the gRPC transport, the operator console, and the plugins that loaded. */
@Module({})
export class AppModule {
  static forRoot(options: AppOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [PlatformModule.forRoot(options), ...CAPABILITY_MODULES, GrpcTransportModule, ConsoleModule, ...options.plugins.map((p) => p.module)],
    };
  }
}

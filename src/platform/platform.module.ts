import { DynamicModule, Global, Module, ValidationPipeOptions } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE, DiscoveryModule } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { AuditAdvertiser } from './audit/audit.advertiser';
import { AuditCheckpointExporter } from './audit/audit-checkpoint.exporter';
import { AuditCheckpointSealer } from './audit/audit-checkpoint.sealer';
import { AuditController } from './audit/audit.controller';
import { AuditLogService } from './audit/audit-log.service';
import { AuditSigningService } from './audit/audit-signing.service';
import { ArtifactRegistryService } from './artifacts/artifact-registry.service';
import { InstallChecks } from './artifacts/install-checks';
import { HOST_CONFIG, HostConfig } from './config/host-config';
import { RequestValidationPipe } from './http/request-validation.pipe';
import { DatabaseSchema, declareSchema } from './database/database-schema';
import { DatabaseNotifications } from './database/database-notifications';
import { DiscoveryController } from './discovery/discovery.controller';
import { DiscoveryDocumentService } from './discovery/discovery.service';
import { ErrorEnvelopeFilter } from './errors/error-envelope.filter';
import { EventLogService } from './events/event-log.service';
import { EventsController } from './events/events.controller';
import { RunLauncherRegistry } from './run-ports/run-launcher';
import { RunRecordsPort } from './run-ports/run-records';
import { HealthController } from './health/health.controller';
import { HealthService } from './health/health.service';
import { ApiKeyService } from './identity/api-key.service';
import { KeyRevocationWatcher } from './identity/key-revocation.watcher';
import { AuthGuard } from './identity/auth.guard';
import { JwtVerifier } from './identity/jwt-verifier';
import { TokenLanes } from './identity/token-lanes';
import { ScimDirectory } from './identity/scim/scim-directory.service';
import { ScimController } from './identity/scim/scim.controller';
import { ConsoleSessions } from './identity/console-session.service';
import { ConsoleSessionController } from './identity/console-session.controller';
import { ProtectedResourceController } from './identity/protected-resource';
import { KeysController } from './identity/keys.controller';
import { AuthorizationSeamsController } from './identity/authorization-seams.controller';
import { SamlSignIn } from './identity/saml/saml-sign-in.service';
import { SubjectLinkSeams } from './identity/saml/subject-link-seams.service';
import { SamlController } from './identity/saml/saml.controller';
import { SamlSeamsController } from './identity/saml/saml-seams.controller';
import { AuthProfilesAdvertiser } from './identity/auth-profiles.advertiser';
import { metricsControllers } from './metrics/metrics-mount';
import { MetricsService } from './metrics/metrics.service';
import { WhoAmIController } from './identity/whoami.controller';
import { RouteAudit } from './identity/route-audit';
import { OpenApiController } from './openapi/openapi.controller';
import { OpenApiHolder } from './openapi/openapi-holder';
import { PluginStateStore } from './plugins/plugin-state.store';
import { HostSecretStore } from './secrets/host-secret.store';
import { RetentionService } from './retention/retention.service';
import { RetentionAdvertiser } from './retention/retention.advertiser';
import { ForceExpireService } from './retention/force-expire.service';
import { ForceExpireListener } from './retention/force-expire.listener';
import { RateLimiterService } from './rate-limit/rate-limiter.service';
import { PeriodicTaskService } from './scheduler/periodic-task.service';
import { SchemaRegistry } from './schemas/schema-registry';
import { ActivityLedger } from './idempotency/activity-ledger.service';
import { IdempotencyStore } from './idempotency/idempotency-store.service';
import { TracingAdvertiser } from './tracing/tracing.advertiser';

/** The request validation every REST route gets (APP_PIPE); other transports validate with the same options. */
export const REQUEST_VALIDATION: ValidationPipeOptions = { whitelist: true, forbidNonWhitelisted: true, transform: true, validationError: { target: false, value: false } };

export interface PlatformOptions {
  config: HostConfig;
  dataSource: DataSource;
  /** The entities and migrations of that database, composed by the application root (the platform imports no capability). */
  schema: DatabaseSchema;
  pluginState: PluginStateStore;
  openApi: OpenApiHolder;
}

/**
 * The cross-cutting host contract every capability uses: config, database, identity and scopes,
 * the error envelope, discovery, the event log, the pack registry, the scheduler and health.
 * The request pipeline is registered as APP_* providers so every bootstrap sees the same one.
 */
@Global()
@Module({})
export class PlatformModule {
  static forRoot(options: PlatformOptions): DynamicModule {
    declareSchema(options.dataSource, options.schema);
    const services = [
      AuditLogService,
      AuditSigningService,
      ApiKeyService,
      KeyRevocationWatcher,
      JwtVerifier,
      TokenLanes,
      ScimDirectory,
      ConsoleSessions,
      SamlSignIn,
      SubjectLinkSeams,
      DiscoveryDocumentService,
      EventLogService,
      RunRecordsPort,
      RunLauncherRegistry,
      ArtifactRegistryService,
      InstallChecks,
      HealthService,
      PeriodicTaskService,
      MetricsService,
      RateLimiterService,
      IdempotencyStore,
      ActivityLedger,
      RetentionService,
      ForceExpireService,
      DatabaseNotifications,
      HostSecretStore,
    ];
    return {
      module: PlatformModule,
      imports: [DiscoveryModule, ScheduleModule.forRoot()],
      controllers: [DiscoveryController, HealthController, OpenApiController, EventsController, KeysController, AuthorizationSeamsController, WhoAmIController, AuditController, ScimController, ConsoleSessionController, SamlController, SamlSeamsController, ProtectedResourceController, ...metricsControllers(options.config.metrics)],
      providers: [
        { provide: HOST_CONFIG, useValue: options.config },
        { provide: DataSource, useValue: options.dataSource },
        { provide: SchemaRegistry, useValue: SchemaRegistry.shared() },
        { provide: PluginStateStore, useValue: options.pluginState },
        { provide: OpenApiHolder, useValue: options.openApi },
        ...services,
        RouteAudit,
        TracingAdvertiser,
        AuditAdvertiser,
        AuthProfilesAdvertiser,
        RetentionAdvertiser,
        ForceExpireListener,
        AuditCheckpointSealer,
        AuditCheckpointExporter,
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_FILTER, useClass: ErrorEnvelopeFilter },
        {
          provide: APP_PIPE,
          useValue: new RequestValidationPipe(REQUEST_VALIDATION),
        },
      ],
      exports: [HOST_CONFIG, DataSource, SchemaRegistry, PluginStateStore, OpenApiHolder, DiscoveryModule, ...services],
    };
  }
}

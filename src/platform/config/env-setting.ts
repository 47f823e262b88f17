/**
 * One documented environment variable. Its own file, so that each settings file (webhooks, tracing,
 * audit, gRPC) declares its variables without importing host-config, which imports them.
 */
export interface EnvSetting {
  name: string;
  description: string;
  default?: string;
}

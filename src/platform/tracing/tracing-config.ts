import type { EnvSetting } from '../config/env-setting';
import { ConfigError } from '../config/config-error';

/** The OTLP transports the host can export traces over (OTEL_EXPORTER_OTLP_PROTOCOL values). */
export const OTLP_PROTOCOLS = ['grpc', 'http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export interface TracingConfig {
  /** Export spans (OTLP). Off: the OpenTelemetry SDK is never loaded. */
  enabled: boolean;
  /** Why it is on or off (logged at start). */
  reason: 'unset' | 'off' | 'host-setting' | 'otel-exporter' | 'sdk-disabled';
  protocol: OtlpProtocol;
  /** The full export URL; unset: the exporter's default (localhost:4317 for gRPC, :4318/v1/traces for HTTP). */
  url?: string;
  serviceName: string;
}

export const TRACING_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OPENWOP_TRACING',
    description:
      'Export OpenTelemetry traces (`true`/`false`). Unset: on exactly when `OTEL_TRACES_EXPORTER` is `otlp`. Off: the OpenTelemetry SDK is not loaded at all. `OTEL_SDK_DISABLED=true` turns it off either way.',
  },
  { name: 'OTEL_TRACES_EXPORTER', description: '`otlp` turns tracing on (when OPENWOP_TRACING is unset); `none` turns it off. Other exporters are refused.' },
  { name: 'OTEL_EXPORTER_OTLP_PROTOCOL', default: 'http/protobuf', description: 'OTLP transport: `grpc`, `http/protobuf` or `http/json` (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` wins when set).' },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    description:
      'Collector base URL (default `http://localhost:4318` for HTTP, `http://localhost:4317` for gRPC); HTTP protocols post to `<endpoint>/v1/traces`. `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) wins when set. Headers, timeout, compression and certificates: the standard `OTEL_EXPORTER_OTLP_*` variables.',
  },
  { name: 'OTEL_SERVICE_NAME', default: 'openwop-host', description: 'The `service.name` resource attribute of every span (more attributes: `OTEL_RESOURCE_ATTRIBUTES`).' },
];

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/**
 * Where one signal's OTLP exports go, from the standard variables: its protocol
 * (`OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`, else http/protobuf) and its URL
 * (`OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT` as is, else `OTEL_EXPORTER_OTLP_ENDPOINT` plus `/v1/<signal>` for HTTP).
 * `names` are the settings a refusal names.
 */
export function otlpTarget(env: NodeJS.ProcessEnv, signal: 'TRACES' | 'METRICS', names: { protocolSetting: string; endpointSetting: string }): { protocol: OtlpProtocol; url?: string } {
  const protocol = str(env, `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`) ?? str(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf';
  if (!(OTLP_PROTOCOLS as readonly string[]).includes(protocol)) throw new ConfigError(`${names.protocolSetting} must be grpc, http/protobuf or http/json; got "${protocol}"`);
  let url = str(env, `OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`);
  const base = str(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (!url && base) url = protocol === 'grpc' ? base : `${base.replace(/\/+$/, '')}/v1/${signal.toLowerCase()}`;
  if (url) {
    let u: URL | undefined;
    try {
      u = new URL(url);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) throw new ConfigError(`${names.endpointSetting} must be an http:// or https:// URL, got "${url}"`);
  }
  return { protocol: protocol as OtlpProtocol, ...(url ? { url } : {}) };
}

/** Reads OPENWOP_TRACING and the standard OTEL_* variables the host itself interprets. */
export function loadTracingConfig(env: NodeJS.ProcessEnv): TracingConfig {
  const raw = str(env, 'OPENWOP_TRACING');
  if (raw !== undefined && !/^(true|false|1|0|yes|no)$/i.test(raw)) throw new ConfigError(`OPENWOP_TRACING must be true or false, got "${raw}"`);
  const exporters = (str(env, 'OTEL_TRACES_EXPORTER') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const e of exporters) {
    if (e !== 'otlp' && e !== 'none') throw new ConfigError(`OTEL_TRACES_EXPORTER: this host exports traces with otlp only (or none), got "${e}"`);
  }
  const { protocol, url } = otlpTarget(env, 'TRACES', { protocolSetting: 'OTEL_EXPORTER_OTLP_PROTOCOL', endpointSetting: 'OTEL_EXPORTER_OTLP_ENDPOINT' });
  const serviceName = str(env, 'OTEL_SERVICE_NAME') ?? 'openwop-host';
  const cfg = (enabled: boolean, reason: TracingConfig['reason']): TracingConfig => ({ enabled, reason, protocol, ...(url ? { url } : {}), serviceName });
  if (/^(true|1|yes)$/i.test(str(env, 'OTEL_SDK_DISABLED') ?? '')) return cfg(false, 'sdk-disabled');
  if (raw !== undefined) {
    if (!/^(true|1|yes)$/i.test(raw)) return cfg(false, 'off');
    if (exporters.length && !exporters.includes('otlp')) throw new ConfigError('OPENWOP_TRACING=true but OTEL_TRACES_EXPORTER=none: set one or the other');
    return cfg(true, 'host-setting');
  }
  return exporters.includes('otlp') ? cfg(true, 'otel-exporter') : cfg(false, 'unset');
}

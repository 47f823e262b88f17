import type { EnvSetting } from '../config/env-setting';
import { ConfigError } from '../config/config-error';
import { otlpTarget, type OtlpProtocol } from '../tracing/tracing-config';

export interface OtlpMetricsConfig {
  /** Push metrics over OTLP. Off: the OpenTelemetry metrics SDK is never loaded. */
  enabled: boolean;
  protocol: OtlpProtocol;
  /** The full export URL; unset: the exporter's default (localhost:4317 for gRPC, :4318/v1/metrics for HTTP). */
  url?: string;
  /** Time between two exports (OTEL_METRIC_EXPORT_INTERVAL), in milliseconds. */
  intervalMs: number;
  /** How long one export may take (OTEL_METRIC_EXPORT_TIMEOUT), in milliseconds. */
  timeoutMs: number;
  serviceName: string;
}

export const OTLP_METRICS_ENV_SETTINGS: EnvSetting[] = [
  {
    name: 'OTEL_METRICS_EXPORTER',
    description:
      '`otlp` pushes the metrics over OTLP as well (to `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, else `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/metrics`; protocol: `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`). Unset, `none` or `prometheus`: not pushed, and the OpenTelemetry metrics SDK is not loaded. `GET /metrics` (Prometheus) is served either way, as `OPENWOP_METRICS` says. `OTEL_SDK_DISABLED=true` turns it off.',
  },
  { name: 'OTEL_METRIC_EXPORT_INTERVAL', default: '60000', description: 'Milliseconds between two OTLP metric exports (at least 100); the last one is sent at shutdown.' },
  { name: 'OTEL_METRIC_EXPORT_TIMEOUT', default: '30000', description: 'Milliseconds one OTLP metric export may take before it is abandoned (at least 100).' },
];

function str(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function millis(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = str(env, name);
  if (raw === undefined) return dflt;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 100 || n > 86_400_000) throw new ConfigError(`${name} must be a whole number of milliseconds from 100 to 86400000, got "${raw}"`);
  return n;
}

/** Reads the standard OTEL_* variables that decide whether, where and how often metrics are pushed over OTLP. */
export function loadOtlpMetricsConfig(env: NodeJS.ProcessEnv): OtlpMetricsConfig {
  const exporters = (str(env, 'OTEL_METRICS_EXPORTER') ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const e of exporters) {
    if (e !== 'otlp' && e !== 'none' && e !== 'prometheus') throw new ConfigError(`OTEL_METRICS_EXPORTER: this host pushes metrics with otlp only (prometheus is GET /metrics; or none), got "${e}"`);
  }
  const { protocol, url } = otlpTarget(env, 'METRICS', { protocolSetting: 'OTEL_EXPORTER_OTLP_METRICS_PROTOCOL', endpointSetting: 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT' });
  const disabled = /^(true|1|yes)$/i.test(str(env, 'OTEL_SDK_DISABLED') ?? '');
  return {
    enabled: !disabled && exporters.includes('otlp'),
    protocol,
    ...(url ? { url } : {}),
    intervalMs: millis(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000),
    timeoutMs: millis(env, 'OTEL_METRIC_EXPORT_TIMEOUT', 30_000),
    serviceName: str(env, 'OTEL_SERVICE_NAME') ?? 'openwop-host',
  };
}

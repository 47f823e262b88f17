import { OTLP_METRICS_ENV_SETTINGS } from '../metrics/otlp-metrics-config';
import { TRACING_ENV_SETTINGS } from '../tracing/tracing-config';
import type { EnvSetting } from './env-setting';

/** The OpenTelemetry settings, traces (src/platform/tracing) and metrics pushed over OTLP (src/platform/metrics). */
export { loadTracingConfig, type TracingConfig } from '../tracing/tracing-config';
export { loadOtlpMetricsConfig, type OtlpMetricsConfig } from '../metrics/otlp-metrics-config';

export const OTEL_ENV_SETTINGS: EnvSetting[] = [...TRACING_ENV_SETTINGS, ...OTLP_METRICS_ENV_SETTINGS];

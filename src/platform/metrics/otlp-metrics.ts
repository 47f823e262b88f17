import type { Registry } from 'prom-client';
import type { OtlpMetricsConfig } from './otlp-metrics-config';

/** An event just appended to the log, as the OTLP metrics read it (run lifecycle and tool calls). */
export interface AppendedEvent {
  scope: { tenant: string };
  streamId: string;
  type: string;
  payload: Record<string, unknown>;
  /** Set on a copy of an earlier event (a fork's history): not counted again. */
  eventId?: string;
}

/** What a started OTLP metrics SDK provides (src/platform/metrics/otlp-metrics-sdk.ts). */
export interface OtlpMetricsBackend {
  events(entries: AppendedEvent[]): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * Starts pushing the metrics over OTLP (the OpenTelemetry metrics SDK is loaded here, on first use);
 * undefined when the configuration leaves it off, and then nothing is loaded.
 */
export async function startOtlpMetrics(cfg: OtlpMetricsConfig, registry: Registry, res: { serviceVersion: string; instanceId: string }): Promise<OtlpMetricsBackend | undefined> {
  if (!cfg.enabled) return undefined;
  const { createOtlpMetricsBackend } = await import('./otlp-metrics-sdk');
  return createOtlpMetricsBackend(cfg, registry, res);
}

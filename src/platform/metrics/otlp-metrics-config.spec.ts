import { ConfigError } from '../config/config-error';
import { loadOtlpMetricsConfig } from './otlp-metrics-config';

describe('loadOtlpMetricsConfig', () => {
  it('is off unless OTEL_METRICS_EXPORTER asks for otlp, whatever endpoint is set', () => {
    expect(loadOtlpMetricsConfig({}).enabled).toBe(false);
    expect(loadOtlpMetricsConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).enabled).toBe(false);
    expect(loadOtlpMetricsConfig({ OTEL_METRICS_EXPORTER: 'prometheus' }).enabled).toBe(false);
    expect(loadOtlpMetricsConfig({ OTEL_METRICS_EXPORTER: 'none' }).enabled).toBe(false);
    expect(loadOtlpMetricsConfig({ OTEL_METRICS_EXPORTER: 'prometheus,otlp' }).enabled).toBe(true);
    expect(loadOtlpMetricsConfig({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }).enabled).toBe(false);
  });

  it('posts to <endpoint>/v1/metrics over HTTP, to the endpoint itself over gRPC; the metrics-specific variables win', () => {
    const on = { OTEL_METRICS_EXPORTER: 'otlp' };
    expect(loadOtlpMetricsConfig({ ...on, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toEqual(
      expect.objectContaining({ protocol: 'http/protobuf', url: 'http://c:4318/v1/metrics', intervalMs: 60_000, timeoutMs: 30_000, serviceName: 'openwop-host' }),
    );
    expect(loadOtlpMetricsConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317' })).toEqual(expect.objectContaining({ protocol: 'grpc', url: 'http://c:4317' }));
    expect(
      loadOtlpMetricsConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://m:9/x' }),
    ).toEqual(expect.objectContaining({ protocol: 'http/json', url: 'http://m:9/x' }));
    expect(loadOtlpMetricsConfig(on).url).toBeUndefined();
    expect(loadOtlpMetricsConfig({ ...on, OTEL_METRIC_EXPORT_INTERVAL: '1000', OTEL_METRIC_EXPORT_TIMEOUT: '500' })).toEqual(expect.objectContaining({ intervalMs: 1000, timeoutMs: 500 }));
  });

  it('refuses what it cannot honour, naming the setting', () => {
    expect(() => loadOtlpMetricsConfig({ OTEL_METRICS_EXPORTER: 'console' })).toThrow(ConfigError);
    expect(() => loadOtlpMetricsConfig({ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'thrift' })).toThrow(/OTEL_EXPORTER_OTLP_METRICS_PROTOCOL/);
    expect(() => loadOtlpMetricsConfig({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'ftp://c' })).toThrow(/OTEL_EXPORTER_OTLP_METRICS_ENDPOINT/);
    expect(() => loadOtlpMetricsConfig({ OTEL_METRIC_EXPORT_INTERVAL: '10' })).toThrow(/OTEL_METRIC_EXPORT_INTERVAL/);
    expect(() => loadOtlpMetricsConfig({ OTEL_METRIC_EXPORT_TIMEOUT: 'soon' })).toThrow(/OTEL_METRIC_EXPORT_TIMEOUT/);
  });
});

import { ConfigError } from '../config/config-error';
import { loadTracingConfig } from './tracing-config';

describe('tracing settings', () => {
  it('is off unless asked for, and says why', () => {
    expect(loadTracingConfig({})).toEqual({ enabled: false, reason: 'unset', protocol: 'http/protobuf', serviceName: 'openwop-host' });
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).enabled).toBe(false);
    expect(loadTracingConfig({ OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
    expect(loadTracingConfig({ OPENWOP_TRACING: 'false', OTEL_TRACES_EXPORTER: 'otlp' })).toEqual(expect.objectContaining({ enabled: false, reason: 'off' }));
    expect(loadTracingConfig({ OTEL_SDK_DISABLED: 'true', OPENWOP_TRACING: 'true' })).toEqual(expect.objectContaining({ enabled: false, reason: 'sdk-disabled' }));
  });

  it('is on with OTEL_TRACES_EXPORTER=otlp or OPENWOP_TRACING=true', () => {
    expect(loadTracingConfig({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual(expect.objectContaining({ enabled: true, reason: 'otel-exporter' }));
    expect(loadTracingConfig({ OPENWOP_TRACING: 'true' })).toEqual(expect.objectContaining({ enabled: true, reason: 'host-setting' }));
  });

  it('reads the protocol, the endpoint and the service name of the standard variables', () => {
    const on = { OPENWOP_TRACING: 'true' };
    expect(loadTracingConfig({ ...on, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).url).toBe('http://collector:4318/v1/traces');
    expect(loadTracingConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317' })).toEqual(expect.objectContaining({ protocol: 'grpc', url: 'http://collector:4317' }));
    expect(loadTracingConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }).protocol).toBe('http/json');
    expect(loadTracingConfig({ ...on, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b/custom' }).url).toBe('https://b/custom');
    expect(loadTracingConfig({ ...on, OTEL_SERVICE_NAME: 'billing-host' }).serviceName).toBe('billing-host');
  });

  it('refuses what it cannot honour, naming the variable', () => {
    for (const [env, msg] of [
      [{ OPENWOP_TRACING: 'sometimes' }, /OPENWOP_TRACING/],
      [{ OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER/],
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }, /OTEL_EXPORTER_OTLP_PROTOCOL/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317' }, /OTEL_EXPORTER_OTLP_ENDPOINT/],
      [{ OPENWOP_TRACING: 'true', OTEL_TRACES_EXPORTER: 'none' }, /OTEL_TRACES_EXPORTER=none/],
    ] as const) {
      expect(() => loadTracingConfig(env)).toThrow(ConfigError);
      expect(() => loadTracingConfig(env)).toThrow(msg);
    }
  });
});

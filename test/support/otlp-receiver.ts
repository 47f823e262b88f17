/**
 * An OTLP receiver for the tests, traces and metrics, over HTTP/protobuf (`POST /v1/traces`,
 * `POST /v1/metrics`) and gRPC (`opentelemetry.proto.collector.trace.v1.TraceService/Export`,
 * `opentelemetry.proto.collector.metrics.v1.MetricsService/Export`), decoding the requests with the
 * messages of the OTLP specification (opentelemetry-proto, trace/v1, metrics/v1 and common/v1: the
 * fields a span tree or a data point needs), so what the host's exporters send is read independently
 * of the exporters' own code.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import * as protobuf from 'protobufjs';

const OTLP_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ExportTraceServiceResponse {}
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; string schema_url = 3; }
message Resource { repeated KeyValue attributes = 1; uint32 dropped_attributes_count = 2; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; string schema_url = 3; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  string trace_state = 3;
  bytes parent_span_id = 4;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  Status status = 15;
  fixed32 flags = 16;
}
message Status { string message = 2; int32 code = 3; }
message ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
message ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; string schema_url = 3; }
message ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; string schema_url = 3; }
message Metric {
  string name = 1;
  string description = 2;
  string unit = 3;
  oneof data { Gauge gauge = 5; Sum sum = 7; Histogram histogram = 9; }
}
message Gauge { repeated NumberDataPoint data_points = 1; }
message Sum { repeated NumberDataPoint data_points = 1; int32 aggregation_temporality = 2; bool is_monotonic = 3; }
message Histogram { repeated HistogramDataPoint data_points = 1; int32 aggregation_temporality = 2; }
message NumberDataPoint {
  repeated KeyValue attributes = 7;
  fixed64 start_time_unix_nano = 2;
  fixed64 time_unix_nano = 3;
  oneof value { double as_double = 4; sfixed64 as_int = 6; }
}
message HistogramDataPoint {
  repeated KeyValue attributes = 9;
  fixed64 start_time_unix_nano = 2;
  fixed64 time_unix_nano = 3;
  fixed64 count = 4;
  double sum = 5;
  repeated fixed64 bucket_counts = 6;
  repeated double explicit_bounds = 7;
}
message KeyValue { string key = 1; AnyValue value = 2; }
message ArrayValue { repeated AnyValue values = 1; }
message KeyValueList { repeated KeyValue values = 1; }
message AnyValue {
  oneof value {
    string string_value = 1;
    bool bool_value = 2;
    int64 int_value = 3;
    double double_value = 4;
    ArrayValue array_value = 5;
    KeyValueList kvlist_value = 6;
    bytes bytes_value = 7;
  }
}
`;

const root = protobuf.parse(OTLP_PROTO, { keepCase: true }).root;
const Request = root.lookupType('otlp.ExportTraceServiceRequest');
const Response = root.lookupType('otlp.ExportTraceServiceResponse');
const MetricsRequest = root.lookupType('otlp.ExportMetricsServiceRequest');
const EMPTY = Buffer.from(Response.encode(Response.create({})).finish());

/** One data point of one metric, as it arrived (one per export: cumulative points repeat). */
export interface ReceivedMetricPoint {
  name: string;
  unit: string;
  /** OTLP metric data kind. */
  kind: 'gauge' | 'sum' | 'histogram';
  /** Sums only: a counter (true) or an up-down counter. */
  monotonic?: boolean;
  attributes: Record<string, unknown>;
  /** Gauges and sums: the value; histograms: the sum of the observations. */
  value: number;
  /** Histograms only. */
  count?: number;
  bounds?: number[];
  resource: Record<string, unknown>;
  via: 'http/protobuf' | 'http/json' | 'grpc';
}

const num = (v: { toString(): string } | number | undefined) => (v === undefined ? 0 : typeof v === 'number' ? v : Number(v.toString()));

function decodeMetrics(buf: Buffer, via: 'http/protobuf' | 'grpc'): ReceivedMetricPoint[] {
  const msg = MetricsRequest.toObject(MetricsRequest.decode(buf), { defaults: false, oneofs: false }) as {
    resource_metrics?: Array<{ resource?: { attributes?: Array<{ key: string; value?: Any }> }; scope_metrics?: Array<{ metrics?: Array<Record<string, any>> }> }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const out: ReceivedMetricPoint[] = [];
  for (const rm of msg.resource_metrics ?? []) {
    const resource = attrs(rm.resource?.attributes);
    for (const sm of rm.scope_metrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const base = { name: m.name ?? '', unit: m.unit ?? '', resource, via };
        if (m.histogram) {
          for (const p of m.histogram.data_points ?? []) {
            out.push({ ...base, kind: 'histogram', attributes: attrs(p.attributes), value: p.sum ?? 0, count: num(p.count), bounds: p.explicit_bounds ?? [] });
          }
          continue;
        }
        const kind = m.sum ? 'sum' : 'gauge';
        for (const p of (m.sum ?? m.gauge)?.data_points ?? []) {
          out.push({ ...base, kind, ...(m.sum ? { monotonic: m.sum.is_monotonic === true } : {}), attributes: attrs(p.attributes), value: p.as_double ?? num(p.as_int) });
        }
      }
    }
  }
  return out;
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  status: { code: number; message: string };
  resource: Record<string, unknown>;
  durationMs: number;
  /** How it arrived. */
  via: 'http/protobuf' | 'grpc';
}

type Any = { string_value?: string; bool_value?: boolean; int_value?: { toNumber(): number } | number; double_value?: number; array_value?: { values?: Any[] }; bytes_value?: Uint8Array };

function value(v: Any | undefined): unknown {
  if (!v) return undefined;
  if (v.string_value !== undefined) return v.string_value;
  if (v.bool_value !== undefined) return v.bool_value;
  if (v.int_value !== undefined) return typeof v.int_value === 'number' ? v.int_value : v.int_value.toNumber();
  if (v.double_value !== undefined) return v.double_value;
  if (v.array_value) return (v.array_value.values ?? []).map(value);
  if (v.bytes_value) return Buffer.from(v.bytes_value).toString('hex');
  return undefined;
}

function attrs(list: Array<{ key: string; value?: Any }> | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, value(kv.value)]));
}

const nanos = (v: { toString(): string } | undefined) => (v === undefined ? 0 : Number(BigInt(v.toString())));
const hex = (b: Uint8Array | undefined) => (b && b.length ? Buffer.from(b).toString('hex') : '');

function decode(buf: Buffer, via: ReceivedSpan['via']): ReceivedSpan[] {
  const msg = Request.toObject(Request.decode(buf), { defaults: false, oneofs: false }) as {
    resource_spans?: Array<{ resource?: { attributes?: Array<{ key: string; value?: Any }> }; scope_spans?: Array<{ spans?: Array<Record<string, any>> }> }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const out: ReceivedSpan[] = [];
  for (const rs of msg.resource_spans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scope_spans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: hex(s.trace_id),
          spanId: hex(s.span_id),
          parentSpanId: hex(s.parent_span_id),
          name: s.name ?? '',
          kind: s.kind ?? 0,
          attributes: attrs(s.attributes),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          resource,
          durationMs: (nanos(s.end_time_unix_nano) - nanos(s.start_time_unix_nano)) / 1e6,
          via,
        });
      }
    }
  }
  return out;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>` (HTTP: the exporter posts to `<url>/v1/traces`; gRPC: the target). */
  url: string;
  spans: ReceivedSpan[];
  /** Every metric data point received, in arrival order. */
  metrics: ReceivedMetricPoint[];
  /** Requests that were not OTLP trace or metric exports (method, path, content type). */
  refused: string[];
  /** Resolves once spans matching `pred` have arrived (or rejects after `ms`). */
  waitFor(pred: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<ReceivedSpan[]>;
  /** Resolves once metric points matching `pred` have arrived (or rejects after `ms`). */
  waitForMetrics(pred: (points: ReceivedMetricPoint[]) => boolean, ms?: number): Promise<ReceivedMetricPoint[]>;
  close(): Promise<void>;
}

function waiter<T extends { name: string }>(spans: T[]) {
  return async (pred: (s: T[]) => boolean, ms = 10_000): Promise<T[]> => {
    const until = Date.now() + ms;
    while (!pred(spans)) {
      if (Date.now() > until) throw new Error(`the expected items did not arrive within ${ms} ms; received: ${[...new Set(spans.map((s) => s.name))].join(', ') || 'none'}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return spans;
  };
}

type JsonKv = Array<{ key: string; value?: Record<string, unknown> }>;

/** An OTLP/JSON AnyValue (camelCase fields; 64-bit integers as strings). */
function jsonValue(v: Record<string, unknown> | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.arrayValue) return ((v.arrayValue as { values?: Array<Record<string, unknown>> }).values ?? []).map(jsonValue);
  return undefined;
}

const jsonAttrs = (list: JsonKv | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));

/** An ExportMetricsServiceRequest in the OTLP/JSON encoding, as `http/json` sends it. */
function decodeMetricsJson(buf: Buffer): ReceivedMetricPoint[] {
  const msg = JSON.parse(buf.toString('utf8')) as { resourceMetrics?: Array<{ resource?: { attributes?: JsonKv }; scopeMetrics?: Array<{ metrics?: Array<Record<string, any>> }> }> }; // eslint-disable-line @typescript-eslint/no-explicit-any
  const out: ReceivedMetricPoint[] = [];
  for (const rm of msg.resourceMetrics ?? []) {
    const resource = jsonAttrs(rm.resource?.attributes);
    for (const sm of rm.scopeMetrics ?? []) {
      for (const m of sm.metrics ?? []) {
        const base = { name: m.name ?? '', unit: m.unit ?? '', resource, via: 'http/json' as const };
        if (m.histogram) {
          for (const p of m.histogram.dataPoints ?? []) out.push({ ...base, kind: 'histogram', attributes: jsonAttrs(p.attributes), value: p.sum ?? 0, count: Number(p.count ?? 0), bounds: p.explicitBounds ?? [] });
          continue;
        }
        const kind = m.sum ? 'sum' : 'gauge';
        for (const p of (m.sum ?? m.gauge)?.dataPoints ?? []) {
          out.push({ ...base, kind, ...(m.sum ? { monotonic: m.sum.isMonotonic === true } : {}), attributes: jsonAttrs(p.attributes), value: p.asDouble ?? Number(p.asInt ?? 0) });
        }
      }
    }
  }
  return out;
}

/**
 * OTLP/HTTP with protobuf bodies, as `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf` sends (and, for
 * metrics, JSON bodies, as `http/json` sends).
 */
export async function startHttpOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetricPoint[] = [];
  const refused: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const signal = req.url === '/v1/traces' ? 'traces' : req.url === '/v1/metrics' ? 'metrics' : undefined;
      const json = signal === 'metrics' && req.headers['content-type'] === 'application/json';
      if (req.method !== 'POST' || !signal || (req.headers['content-type'] !== 'application/x-protobuf' && !json)) {
        refused.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
        res.writeHead(404).end();
        return;
      }
      if (signal === 'traces') spans.push(...decode(Buffer.concat(chunks), 'http/protobuf'));
      else metrics.push(...(json ? decodeMetricsJson(Buffer.concat(chunks)) : decodeMetrics(Buffer.concat(chunks), 'http/protobuf')));
      if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(EMPTY);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    metrics,
    refused,
    waitFor: waiter(spans),
    waitForMetrics: waiter(metrics),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** OTLP/gRPC (cleartext HTTP/2), as `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` sends. */
export async function startGrpcOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metrics: ReceivedMetricPoint[] = [];
  const server = new grpc.Server();
  server.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: () => Buffer.from(Response.encode(Response.create({})).finish()),
        responseDeserialize: (b: Buffer) => b,
      },
    },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        spans.push(...decode(call.request, 'grpc'));
        cb(null, {});
      },
    },
  );
  server.addService(
    {
      Export: {
        path: '/opentelemetry.proto.collector.metrics.v1.MetricsService/Export',
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: () => EMPTY,
        responseDeserialize: (b: Buffer) => b,
      },
    },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        metrics.push(...decodeMetrics(call.request, 'grpc'));
        cb(null, {});
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metrics,
    refused: [],
    waitFor: waiter(spans),
    waitForMetrics: waiter(metrics),
    close: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}

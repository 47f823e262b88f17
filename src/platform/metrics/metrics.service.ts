import { CoalescedSoon } from '../scheduler/coalesced-soon';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type * as PromClient from 'prom-client';
import type { CounterConfiguration, GaugeConfiguration, HistogramConfiguration, Metric } from 'prom-client';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { WiringFault } from '../errors/internal-fault';
import { HOST_VERSION } from '../discovery/discovery.service';
import { type AppendedEvent, type OtlpMetricsBackend, startOtlpMetrics } from './otlp-metrics';
import type { OtlpMetricsConfig } from './otlp-metrics-config';

// The metric classes from their own files: prom-client's index also loads its default process
// metrics and, through them, the OpenTelemetry API (some 80 modules in all); those load with the
// first exposition (processRegistry), not at every start.
const Registry = require('prom-client/lib/registry') as typeof PromClient.Registry;
type Registry = PromClient.Registry;
const Counter = require('prom-client/lib/counter') as typeof PromClient.Counter;
type Counter<L extends string> = PromClient.Counter<L>;
const Gauge = require('prom-client/lib/gauge') as typeof PromClient.Gauge;
type Gauge<L extends string> = PromClient.Gauge<L>;
const Histogram = require('prom-client/lib/histogram') as typeof PromClient.Histogram;
type Histogram<L extends string> = PromClient.Histogram<L>;

/** Every metric the host and its capabilities expose starts with this prefix. */
export const METRIC_PREFIX = 'openwop_';

/** Latency buckets (seconds) for request-sized work: 1 ms .. 10 s. */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The label of requests no route matched (raw URLs would make the series unbounded). */
export const UNMATCHED_ROUTE = 'unmatched';

let processMetrics: Registry | undefined;

/**
 * Node.js process metrics (CPU, memory, event-loop lag, GC) are collected once per process: their
 * collectors install process-wide observers, so several hosts in one process (tests) share them.
 */
function processRegistry(): Registry {
  if (!processMetrics) {
    processMetrics = new Registry();
    (require('prom-client') as typeof PromClient).collectDefaultMetrics({ register: processMetrics, prefix: METRIC_PREFIX });
  }
  return processMetrics;
}

interface PgPoolLike {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * The host's Prometheus registry, one per application (never prom-client's global one, so two hosts
 * in one process, as in the tests, keep their own numbers). Platform code records HTTP requests,
 * database pool use and event-log appends here; a capability registers its own collectors through
 * `counter()`, `gauge()` and `histogram()` (a gauge may compute its value at scrape time with
 * `collect`), and `GET /metrics` exposes all of them. With `OTEL_METRICS_EXPORTER=otlp` they are
 * also pushed over OTLP (otlp-metrics-sdk.ts), with the metrics spec/v1/observability.md names.
 */
/** The events that end a run: its metrics are exported soon after. */
const RUN_ENDS = new Set(['run.completed', 'run.failed', 'run.cancelled']);

@Injectable()
export class MetricsService implements OnModuleInit, OnApplicationShutdown {
  readonly registry = new Registry();
  private otlp?: OtlpMetricsBackend;
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly eventAppend: Histogram<string>;

  constructor(
    private readonly ds: DataSource,
    private readonly adapterHost: HttpAdapterHost,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {
    this.httpRequests = this.counter({
      name: 'openwop_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
    });
    this.httpDuration = this.histogram({
      name: 'openwop_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route pattern and status code.',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
    });
    this.eventAppend = this.histogram({
      name: 'openwop_event_log_append_duration_seconds',
      help: 'Time to append one event to the durable event log (sequence upsert and insert).',
      buckets: LATENCY_BUCKETS,
    });
    const pool = () => this.pool();
    this.gauge({
      name: 'openwop_db_pool_connections',
      help: 'PostgreSQL pool connections of this replica: total (open), idle, and waiting (requests queued for a connection).',
      labelNames: ['state'],
      collect() {
        const p = pool();
        if (!p) return;
        this.set({ state: 'total' }, p.totalCount);
        this.set({ state: 'idle' }, p.idleCount);
        this.set({ state: 'waiting' }, p.waitingCount);
      },
    });
  }

  async onModuleInit(): Promise<void> {
    // Every collector is registered by now (constructors run before any module initializes).
    this.otlp = await startOtlpMetrics(this.config.otlpMetrics, this.registry, { serviceVersion: HOST_VERSION, instanceId: this.config.instanceId });
    if (this.otlp) new Logger('metrics').log({ msg: 'OpenTelemetry metrics pushed over OTLP', protocol: this.config.otlpMetrics.protocol, endpoint: this.config.otlpMetrics.url ?? 'default', intervalMs: this.config.otlpMetrics.intervalMs });
    if (this.config.metrics === 'off') return;
    const fastify = this.adapterHost.httpAdapter?.getInstance<FastifyInstance>();
    if (!fastify) return;
    fastify.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
      this.recordRequest(req.method, req.routeOptions?.url, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }

  /** Pushes the last figures and stops the OTLP export (nothing while it is off). */
  async onApplicationShutdown(): Promise<void> {
    const otlp = this.otlp;
    this.otlp = undefined;
    this.early.cancel();
    await otlp?.shutdown().catch((e: unknown) => new Logger('metrics').warn({ msg: 'metrics: the last OTLP export failed', err: (e as Error).message }));
  }

  /** The OTLP export's settings while the metrics are pushed over OTLP (undefined while off). */
  otlpExportConfig(): OtlpMetricsConfig | undefined {
    return this.otlp ? this.config.otlpMetrics : undefined;
  }

  /** Exports the metrics over OTLP now, instead of at the next interval (a no-op while off). */
  async flushOtlp(): Promise<void> {
    await this.otlp?.forceFlush();
  }

  /**
   * Events just appended to the log (or a builder of them): the OTLP run and tool-call metrics count
   * them (one check while off). A run that ended is exported soon (its duration, and the backlog and
   * queue gauges with it) instead of at the next interval (60 s by default): coalesced, one early
   * export at most every second, as the traces do (tracing.ts exportSoon).
   */
  eventsAppended(entries: AppendedEvent[] | (() => AppendedEvent[])): void {
    if (!this.otlp) return;
    const list = typeof entries === 'function' ? entries() : entries;
    this.otlp.events(list);
    if (list.some((e) => RUN_ENDS.has(e.type))) this.early.request();
  }

  private readonly early = new CoalescedSoon(() => void this.otlp?.forceFlush().catch(() => undefined));

  /** Records one answered request; `route` is the route pattern (`/v1/goals/:id`), never the raw URL. */
  recordRequest(method: string, route: string | undefined, status: number, seconds: number): void {
    const labels = { method, route: route ?? UNMATCHED_ROUTE, status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
  }

  /** Times an event-log append. */
  async timeEventAppend<T>(fn: () => Promise<T>): Promise<T> {
    const end = this.eventAppend.startTimer();
    try {
      return await fn();
    } finally {
      end();
    }
  }

  counter<L extends string = string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return this.adopt(new Counter<L>({ ...config, registers: [] }));
  }

  gauge<L extends string = string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
    return this.adopt(new Gauge<L>({ ...config, registers: [] }));
  }

  histogram<L extends string = string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
    return this.adopt(new Histogram<L>({ ...config, registers: [] }));
  }

  /** The exposition text (Prometheus text format 0.0.4). */
  async render(): Promise<{ contentType: string; body: string }> {
    const merged = Registry.merge([processRegistry(), this.registry]);
    return { contentType: this.registry.contentType, body: await merged.metrics() };
  }

  private adopt<M extends Metric>(metric: M): M {
    const name = (metric as unknown as { name: string }).name;
    if (!name.startsWith(METRIC_PREFIX)) throw new WiringFault(`metric "${name}" must start with "${METRIC_PREFIX}"`);
    // Registering a name twice throws: two collectors never silently share one series.
    this.registry.registerMetric(metric);
    return metric;
  }

  private pool(): PgPoolLike | undefined {
    const driver = this.ds.driver as unknown as { master?: PgPoolLike };
    const p = driver.master;
    return p && typeof p.totalCount === 'number' ? p : undefined;
  }
}

/**
 * The metrics named by spec/v1/observability.md that this host pushes over OTLP (advertised under
 * `observability.metrics.names`). Its own file, so discovery names them without loading the SDK.
 */
export const SPEC_METRIC_NAMES = [
  'openwop.run.completed',
  'openwop.run.duration',
  'openwop.run.active',
  'openwop.run.backlog',
  'openwop.queue.depth',
  'openwop.node.completed',
  'openwop.activity.invocations',
  'openwop.activity.duration',
] as const;

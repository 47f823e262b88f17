import type { Type } from '@nestjs/common';
import { PublicMetricsController, ScopedMetricsController } from './metrics.controller';

/** The controller the access mode mounts; `off` mounts none, so `/metrics` is an unknown route (404). */
export function metricsControllers(mode: 'public' | 'scope' | 'off'): Type[] {
  if (mode === 'public') return [PublicMetricsController];
  if (mode === 'scope') return [ScopedMetricsController];
  return [];
}

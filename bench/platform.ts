/**
 * The cost of the host pipeline (guard, API-key verification, routing, error filter) on a
 * protected route against a bare Fastify route serving the same body.
 *   node bin/bench.js platform
 */
import { ApiKeyService } from '../src/platform/identity/api-key.service';
import { bareServer, measure, report, startBenchHost } from './harness';

async function main(): Promise<void> {
  const bench = await startBenchHost();
  try {
    const { key } = await bench.host.app.get(ApiKeyService).create({ tenant: 'bench', principal: 'bench', scopes: ['runs:read'] });
    const url = `${bench.baseUrl}/v1/runs/host/events/poll`;
    const sample = await (await fetch(url, { headers: { authorization: `Bearer ${key}` } })).text();
    const bare = await bareServer('/v1/runs/host/events/poll', sample);
    try {
      await measure('warm-up', url, { durationSec: 2, headers: { authorization: `Bearer ${key}` } });
      const baseline = await measure('bare Fastify route', bare.url);
      const subject = await measure('host: GET /v1/runs/host/events/poll', url, { headers: { authorization: `Bearer ${key}` } });
      report(baseline, subject);
    } finally {
      await bare.close();
    }
  } finally {
    await bench.close();
  }
}

void main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});

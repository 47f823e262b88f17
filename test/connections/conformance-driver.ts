import * as fs from 'node:fs';
import * as path from 'node:path';
import { createTestApp, HttpResult, TestApp } from '../support/test-app';

/**
 * Drives the host the way the official connection-pack scenarios do: the suite's environment
 * (seams on, one API key), the root `connections.packsSupported` gate, and the §10 seams. Where the
 * official suite soft-skips on 404/403 these tests fail instead: the host must serve the seams.
 */
export interface ConformanceHost {
  t: TestApp;
  key: string;
  seam(route: 'install' | 'resolve' | 'consent-plan' | 'egress-check', body: unknown): Promise<HttpResult>;
  packsSupported(): Promise<boolean>;
}

export const FIXTURES_DIR = path.resolve(__dirname, '../fixtures/connection-packs');

export function loadFixture(name: 'github' | 'apihosts-valid'): Record<string, any> {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES_DIR, `connection-pack-${name}.json`), 'utf8'));
}

export async function startConformanceHost(): Promise<ConformanceHost> {
  const t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true' } });
  const key = await t.key({ tenant: 'conformance', principal: 'conformance-suite', roles: ['admin'] });
  return {
    t,
    key,
    async seam(route, body) {
      const r = await t.http('POST', `/v1/host/sample/connection-packs/${route}`, { token: key, body, headers: { accept: 'application/json' } });
      // The official scenarios soft-skip on these; a conforming host serves the seam.
      if (r.status === 404 || r.status === 403) throw new Error(`seam ${route} answered ${r.status}: ${r.text}`);
      return r;
    },
    async packsSupported() {
      const r = await t.http('GET', '/.well-known/openwop');
      expect(r.status).toBe(200);
      return r.body?.connections?.packsSupported === true;
    },
  };
}

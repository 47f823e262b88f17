/**
 * Serving protocol major 2 beside major 1 must not change what a v1 client reads: every `/v1/...`
 * answer stays byte-identical except for the added `OpenWOP-Version` and `Vary` headers (issue 37).
 *
 * The snapshot beside this file was recorded from the host BEFORE the versioning layer existed; the
 * bodies here are compared with it (ids, timestamps and durations replaced by placeholders, nothing
 * else), on a host serving major 1 only and on one serving both majors, header-less and with
 * `OpenWOP-Version: 1` / `1.0`. A deliberate change to one of these v1 answers updates the snapshot
 * (`npx jest test/platform/v1-byte-identity.e2e-spec.ts -u`) in the commit that makes it.
 */
import { waitForStatus } from '../runs/run-kit';
import { createTestApp, TestApp } from '../support/test-app';

/** Replaces what differs from run to run (uuids, ULIDs, minted ids, instants, durations) by placeholders. */
function normalize(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<uuid>')
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g, '<instant>')
    .replace(/"(durationMs|elapsedMs|latencyMs)":\d+/g, '"$1":<ms>')
    .replace(/"(runId|eventId|correlationId|requestId)":"[^"]+"/g, '"$1":"<id>"')
    .replace(/\/v1\/runs\/[^/"?]+/g, '/v1/runs/<id>');
}

/** The v1 exchanges whose answers are compared (method, path, body, whether a credential is sent). */
const EXCHANGES: Array<{ name: string; method: string; url: string; body?: unknown; rawBody?: string; anonymous?: boolean }> = [
  { name: 'unknown route', method: 'GET', url: '/v1/does-not-exist' },
  { name: 'unknown run', method: 'GET', url: '/v1/runs/not-a-run' },
  { name: 'unauthenticated run list', method: 'GET', url: '/v1/runs', anonymous: true },
  { name: 'malformed JSON body', method: 'POST', url: '/v1/runs', rawBody: '{' },
  { name: 'invalid create body', method: 'POST', url: '/v1/runs', body: { nope: true } },
  { name: 'unknown workflow', method: 'POST', url: '/v1/runs', body: { workflowId: 'no.such.workflow' } },
  { name: 'empty webhook list', method: 'GET', url: '/v1/webhooks' },
  { name: 'unknown tool', method: 'GET', url: '/v1/tools/no.such.tool' },
  { name: 'unknown interrupt token', method: 'GET', url: '/v1/interrupts/not-a-token', anonymous: true },
];

async function answers(t: TestApp, token: string, headers: Record<string, string>): Promise<Record<string, { status: number; body: string }>> {
  const out: Record<string, { status: number; body: string }> = {};
  for (const x of EXCHANGES) {
    const r = await t.http(x.method, x.url, {
      token: x.anonymous ? undefined : token,
      body: x.body,
      rawBody: x.rawBody,
      headers: { ...(x.rawBody !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    });
    out[x.name] = { status: r.status, body: normalize(r.text) };
  }
  // A run's life as v1 reads it: create, read, poll its events (the engine's own answers).
  const created = await t.http('POST', '/v1/runs', { token, body: { workflowId: 'conformance-noop', inputs: {} }, headers });
  out['create run'] = { status: created.status, body: normalize(created.text) };
  const runId = created.body.runId as string;
  await waitForStatus(t, token, runId, ['completed']);
  const read = await t.http('GET', `/v1/runs/${runId}`, { token, headers });
  out['read run'] = { status: read.status, body: normalize(read.text) };
  const poll = await t.http('GET', `/v1/runs/${runId}/events/poll`, { token, headers });
  out['poll run events'] = { status: poll.status, body: normalize(poll.text) };
  return out;
}

describe.each([
  { majors: undefined, label: 'a host serving major 1' },
  { majors: '1,2', label: 'a host serving majors 1 and 2' },
])('v1 answers are unchanged on $label', ({ majors }) => {
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', ...(majors ? { OPENWOP_PROTOCOL_MAJORS: majors } : {}) } });
    token = await t.key({ roles: ['admin'] });
  });
  afterAll(() => t?.close());

  it('header-less: the bodies recorded before the versioning layer', async () => {
    expect(await answers(t, token, {})).toMatchSnapshot();
  });

  it.each(['1', '1.0'])('OpenWOP-Version: %s answers the same bodies', async (v) => {
    expect(await answers(t, token, { 'openwop-version': v })).toEqual(await answers(t, token, {}));
  });
});

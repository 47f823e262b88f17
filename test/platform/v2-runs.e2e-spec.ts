/**
 * The run family under both protocol majors (issue 37; docs/versions.md "What a v2 client sees"):
 * one host, the same handlers, each major's representation. A run created under either major is
 * read, followed (poll and SSE) and cancelled under the other; the v2 answers are the closed v2
 * shapes (snapshot with owner.subject, poll, events in the v2 vocabulary from sequence 0, runList),
 * validated against the published v2 schemas.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { SCHEMAS_ROOT } from '../../src/platform/schemas/schema-registry';
import { createTestApp, HttpResult, TestApp } from '../support/test-app';

const V2 = path.join(SCHEMAS_ROOT, 'openwop', 'v2');
const schema = (name: string) => JSON.parse(fs.readFileSync(path.join(V2, name), 'utf8'));
const ajv = new Ajv2020({ strict: false, validateFormats: false });
for (const f of ['ids', 'subject', 'agent-ref', 'part', 'orchestrator-decision', 'conversation-event', 'run-snapshot', 'run-event', 'run-list-response']) ajv.addSchema(schema(`${f}.schema.json`));
const payloads = ajv.compile(schema('run-event-payloads.schema.json'));
const payloadDefs = schema('run-event-payloads.schema.json') as { _typeIndex: { properties: Record<string, { $ref: string }> } };
const validPayload = (type: string, payload: unknown): boolean => {
  const ref = payloadDefs._typeIndex.properties[type]?.$ref;
  if (!ref) return false;
  const v = ajv.getSchema(`https://openwop.dev/spec/v2/run-event-payloads.schema.json${ref}`) ?? payloads;
  return v(payload) as boolean;
};

const MAJORS = [1, 2] as const;
type Major = (typeof MAJORS)[number];
const TENANT = 'acme';

/** A bound run id as one path segment (`acme/<id>` → `acme~2F<id>`). */
const segment = (id: string) => id.replace('/', '~2F');

/** One operation under a major: `/v1/...` at 1, the unversioned path with `OpenWOP-Version: 2` at 2 (ids as that major writes them). */
function at(t: TestApp, token: string, major: Major) {
  const bare = (id: string) => id.slice(id.indexOf('/') + 1);
  const idOf = (id: string) => (major === 1 ? bare(id) : segment(id.includes('/') ? id : `${TENANT}/${id}`));
  const url = (p: string) => (major === 1 ? `/v1${p}` : p);
  const headers = (h: Record<string, string> = {}) => (major === 2 ? { 'openwop-version': '2', ...h } : h);
  return {
    create: (body: Record<string, unknown>) => t.http('POST', url('/runs'), { token, body, headers: headers() }),
    get: (id: string) => t.http('GET', url(`/runs/${idOf(id)}`), { token, headers: headers() }),
    poll: (id: string, query = '') => t.http('GET', url(`/runs/${idOf(id)}/events/poll?timeout=0${query}`), { token, headers: headers() }),
    sse: (id: string, h: Record<string, string> = {}) => t.http('GET', url(`/runs/${idOf(id)}/events`), { token, headers: headers({ accept: 'text/event-stream', ...h }) }),
    cancel: (id: string) => t.http('POST', url(`/runs/${idOf(id)}/cancel`), { token, body: { reason: 'test' }, headers: headers() }),
    list: (query: string) => t.http('GET', url(`/runs${query}`), { token, headers: headers() }),
  };
}

/** The SSE frames of a finished stream: `{ id, event, data }`. */
function frames(r: HttpResult): Array<{ id?: string; event?: string; data: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  return r.text
    .split('\n\n')
    .filter((f) => f.includes('data: '))
    .map((f) => {
      const line = (k: string) => f.split('\n').find((l) => l.startsWith(`${k}: `))?.slice(k.length + 2);
      return { id: line('id'), event: line('event'), data: JSON.parse(line('data')!) };
    });
}

describe('the run family under both majors (OPENWOP_PROTOCOL_MAJORS=1,2)', () => {
  let t: TestApp;
  let token: string;
  const snapshotOk = () => ajv.getSchema('https://openwop.dev/spec/v2/run-snapshot.schema.json')!;

  beforeAll(async () => {
    t = await createTestApp({ env: { OPENWOP_TEST_SEAMS: 'true', OPENWOP_PROTOCOL_MAJORS: '1,2' } });
    token = await t.key({ tenant: TENANT, principal: 'runner', roles: ['admin'] });
  });
  afterAll(() => t?.close());

  async function finished(major: Major, id: string): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
    const api = at(t, token, major);
    for (let i = 0; i < 300; i++) {
      const r = await api.get(id);
      if (r.status === 200 && ['completed', 'failed', 'cancelled'].includes(r.body.status)) return r.body;
      await new Promise((res) => setTimeout(res, 50));
    }
    throw new Error(`run ${id} did not finish`);
  }

  describe.each(MAJORS)('a run created under major %s', (created) => {
    const other: Major = created === 1 ? 2 : 1;
    let runId: string;

    beforeAll(async () => {
      const r = await at(t, token, created).create({ workflowId: 'conformance-noop', inputs: {} });
      expect(r.status).toBe(201);
      runId = r.body.runId;
      // Major 2 mints tenant-bound ids; major 1 bare ones.
      expect(runId.startsWith(`${TENANT}/`)).toBe(created === 2);
      await finished(created, runId);
    });

    it.each(MAJORS)('is read under major %s in that major\'s representation', async (major) => {
      const r = await at(t, token, major).get(runId);
      expect(r.status).toBe(200);
      expect(r.headers['openwop-version']).toBe(`${major}.0`);
      if (major === 1) {
        expect(r.body.runId).not.toContain('/');
        expect(r.body.owner).toEqual({ tenant: TENANT, principal: 'runner' });
        expect(r.body.outputs).toBeDefined();
      } else {
        expect(r.body.runId).toBe(`${TENANT}/${runId.slice(runId.indexOf('/') + 1)}`);
        // The subject recorded when the run was created, whichever major created it.
        expect(r.body.owner).toEqual({ tenant: TENANT, subject: { issuer: 'urn:openwop-host:api-keys', subjectId: 'runner', tenant: TENANT, lane: 'api-key', kind: 'workload' } });
        expect(r.body.outputs).toBeUndefined();
        expect(r.body.extensions['openwop-host.run'].outputs).toBeDefined();
        const valid = snapshotOk();
        expect({ ok: valid(r.body), errors: valid.errors ?? null }).toEqual({ ok: true, errors: null });
      }
    });

    it.each(MAJORS)('is polled under major %s with that major\'s events', async (major) => {
      const r = await at(t, token, major).poll(runId);
      expect(r.status).toBe(200);
      if (major === 1) {
        expect(Object.keys(r.body).sort()).toEqual(['events', 'isComplete', 'lastSequence']);
        expect(r.body.events[0].sequence).toBe(1);
        expect(r.body.events[0].schemaVersion).toBeUndefined();
        expect(r.body.events[0].payload.owner.principal).toBe('runner');
      } else {
        expect(Object.keys(r.body).sort()).toEqual(['events', 'isTerminal', 'lastSequence', 'runId', 'status']);
        expect(r.body).toEqual(expect.objectContaining({ status: 'completed', isTerminal: true, lastSequence: r.body.events.length - 1 }));
        expect(r.body.events.map((e: { sequence: number }) => e.sequence)).toEqual(r.body.events.map((_: unknown, i: number) => i));
        const valid = ajv.getSchema('https://openwop.dev/spec/v2/run-event.schema.json')!;
        for (const e of r.body.events) {
          expect({ ok: valid(e), errors: valid.errors ?? null }).toEqual({ ok: true, errors: null });
          expect({ type: e.type, ok: validPayload(e.type, e.payload) }).toEqual({ type: e.type, ok: true });
          expect(e.runId).toBe(r.body.runId);
        }
        expect(r.body.events.find((e: { type: string }) => e.type === 'run.completed').payload.outputs).toEqual(expect.any(Object));
        // afterSequence is exclusive, in the v2 sequence space.
        const after = await at(t, token, 2).poll(runId, '&afterSequence=0');
        expect(after.body.events.map((e: { sequence: number }) => e.sequence)).toEqual(r.body.events.slice(1).map((e: { sequence: number }) => e.sequence));
        const past = await at(t, token, 2).poll(runId, '&afterSequence=1000');
        expect(past.body).toEqual(expect.objectContaining({ events: [], lastSequence: r.body.lastSequence }));
      }
    });

    it.each(MAJORS)('is followed over SSE under major %s: ids in that major\'s sequence space, Last-Event-ID resumes after it', async (major) => {
      const api = at(t, token, major);
      const all = frames(await api.sse(runId));
      const first = major === 1 ? 1 : 0;
      expect(all[0]).toEqual(expect.objectContaining({ id: String(first), event: 'run.started' }));
      for (const f of all) expect(f.data.runId).toBe(major === 1 ? runId.slice(runId.indexOf('/') + 1) : `${TENANT}/${runId.slice(runId.indexOf('/') + 1)}`);
      const resumed = frames(await api.sse(runId, { 'last-event-id': String(first) }));
      expect(resumed.map((f) => f.id)).toEqual(all.slice(1).map((f) => f.id));
    });

    it(`is cancelled under major ${other}, and that major answers a finished run as it does`, async () => {
      const live = await at(t, token, created).create({ workflowId: 'conformance-cancellable', inputs: { delayMs: 30_000 } });
      expect(live.status).toBe(201);
      const c = await at(t, token, other).cancel(live.body.runId);
      expect(c.status).toBe(200);
      expect(['cancelling', 'cancelled']).toContain(c.body.status);
      const ended = await finished(created, live.body.runId);
      expect(ended.status).toBe('cancelled');
      // A finished run: v1 answers it as it ended (200), v2 refuses (409 run_terminal).
      const again = await at(t, token, other).cancel(runId);
      expect(again.status).toBe(other === 1 ? 200 : 409);
      if (other === 2) expect(again.body.error).toBe('run_terminal');
    });
  });

  it('lists runs under both majors; the v2 page is a closed run-list-response filtered exactly by workflowId', async () => {
    await at(t, token, 1).create({ workflowId: 'conformance-failure', inputs: {} });
    const v1 = await at(t, token, 1).list('?limit=500&workflowId=conformance-noop');
    const v2 = await at(t, token, 2).list('?limit=500&workflowId=conformance-noop');
    expect(v1.status).toBe(200);
    expect(v2.status).toBe(200);
    expect(v1.body.nextCursor).toBeNull();
    expect(v2.body.nextCursor).toBeUndefined();
    expect(v2.body.runs.map((r: { runId: string }) => r.runId)).toEqual(v1.body.runs.map((r: { runId: string }) => `${TENANT}/${r.runId}`));
    expect(new Set(v2.body.runs.map((r: { workflowId: string }) => r.workflowId))).toEqual(new Set(['conformance-noop']));
    const valid = ajv.getSchema('https://openwop.dev/spec/v2/run-list-response.schema.json')!;
    expect({ ok: valid(v2.body), errors: valid.errors ?? null }).toEqual({ ok: true, errors: null });
    const foreign = await at(t, token, 2).list('?cursor=not-a-cursor-of-this-host');
    expect([foreign.status, foreign.body.error]).toEqual([400, 'validation_error']);
  });

  it('takes the closed, nested v2 configurable at major 2 (and v1\'s flat one at major 1)', async () => {
    const ok = await at(t, token, 2).create({ workflowId: 'conformance-noop', configurable: { version: 1, run: { maxLoopIterations: 5 } } });
    expect(ok.status).toBe(201);
    expect(ok.body.configurable).toEqual(expect.objectContaining({ version: 1, run: expect.objectContaining({ maxLoopIterations: 5 }) }));
    const v1 = await at(t, token, 1).get(ok.body.runId);
    expect(v1.body.configurable.maxLoopIterations).toBe(5);
    for (const bad of [{ version: 1, ai: { 'ai.provider': 'x' } }, { version: 1, unknownKey: 1 }, { run: {} }, { version: 2 }]) {
      const r = await at(t, token, 2).create({ workflowId: 'conformance-noop', configurable: bad });
      expect([r.status, r.body.error]).toEqual([400, 'validation_error']);
    }
    expect((await at(t, token, 1).create({ workflowId: 'conformance-noop', configurable: { maxLoopIterations: 5 } })).status).toBe(201);
  });

  it('reads a seeded era-2 log translated (types by the codemap, sequence 0, times kept) and keeps its era', async () => {
    const events = [
      { type: 'run.started', sequence: 0, payload: { workflowId: 'conformance-noop' }, timestamp: '2026-01-15T10:00:00.000Z' },
      { type: 'agent.toolCalled', sequence: 1, payload: { agentId: 'a', toolName: 'echo', callId: 'c-1' }, timestamp: '2026-01-15T10:00:01.000Z' },
      { type: 'run.completed', sequence: 2, payload: { durationMs: 2000 }, timestamp: '2026-01-15T10:00:02.000Z' },
    ];
    const seeded = await t.http('POST', '/v1/host/sample/event-log/seed', { token, body: { eventLogSchemaVersion: 2, status: 'completed', events } });
    expect(seeded.status).toBe(201);
    const poll = await at(t, token, 2).poll(seeded.body.runId);
    expect(poll.body.events.map((e: { type: string; sequence: number; timestamp: string }) => [e.type, e.sequence, e.timestamp])).toEqual([
      ['run.started', 0, events[0].timestamp],
      ['agent.tool-called', 1, events[1].timestamp],
      ['run.completed', 2, events[2].timestamp],
    ]);
    // v1 reads the log as stored.
    const v1 = await at(t, token, 1).poll(seeded.body.runId);
    expect(v1.body.events.map((e: { type: string }) => e.type)).toEqual(['run.started', 'agent.toolCalled', 'run.completed']);
    const snap = (await at(t, token, 2).get(seeded.body.runId)).body;
    expect(snap.eventLogSchemaVersion).toBe(2);
    // A run of the era before subjects were recorded: its owner is the legacy subject.
    expect(snap.owner.subject).toEqual({ issuer: 'urn:openwop:legacy', subjectId: 'runner', tenant: TENANT, lane: 'workload', kind: 'workload' });
    // An unmapped, unprefixed type fails the v2 read, never guessed; v1 still reads it.
    const bad = await t.http('POST', '/v1/host/sample/event-log/seed', { token, body: { eventLogSchemaVersion: 2, status: 'completed', events: [{ type: 'made.up', sequence: 0, payload: {} }] } });
    const refused = await at(t, token, 2).poll(bad.body.runId);
    expect([refused.status, refused.body.error]).toEqual([500, 'event_type_unmapped']);
    expect((await at(t, token, 1).poll(bad.body.runId)).status).toBe(200);
  });
});

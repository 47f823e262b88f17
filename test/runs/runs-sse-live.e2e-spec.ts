/** `GET /v1/runs/{id}/events` followed live over a real socket while a run is in flight, and resumed with Last-Event-ID. */
import * as http from 'node:http';
import { createTestApp, TestApp } from '../support/test-app';
import { expectSchemaValid, installChains, runEvents, TestEvent } from './run-kit';

interface Received {
  id: number;
  type: string;
  event: TestEvent;
  at: number;
}

/** Opens an SSE stream and hands each event to `onEvent` the moment its frame is complete. */
function follow(port: number, path: string, token: string, onEvent: (e: Received, stop: () => void) => void, lastEventId?: string) {
  const received: Received[] = [];
  let headers: http.IncomingHttpHeaders = {};
  let status = 0;
  const done = new Promise<{ ended: boolean }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false, headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) } }, (res) => {
      status = res.statusCode ?? 0;
      headers = res.headers;
      let buf = '';
      const stop = () => {
        req.destroy();
        resolve({ ended: false });
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (frame.startsWith(':')) continue; // keep-alive comment
          const id = /^id: (\d+)$/m.exec(frame);
          const type = /^event: (.+)$/m.exec(frame);
          const data = /^data: (.+)$/m.exec(frame);
          if (!id || !type || !data) return reject(new Error(`malformed SSE frame: ${frame}`));
          const r = { id: Number(id[1]), type: type[1], event: JSON.parse(data[1]) as TestEvent, at: Date.now() };
          received.push(r);
          onEvent(r, stop);
        }
      });
      res.on('end', () => resolve({ ended: true }));
      res.on('error', () => resolve({ ended: false }));
    });
    req.on('error', (e) => ((e as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve({ ended: false }) : reject(e)));
    req.end();
  });
  return { received, done, status: () => status, headers: () => headers };
}

describe('runs: SSE followed live', () => {
  let t: TestApp;
  let key: string;
  let port: number;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = t.app.getHttpServer().address();
    port = typeof addr === 'object' && addr ? addr.port : 0;
    key = await t.key({ scopes: ['runs:create', 'runs:read'] });
    await installChains(t, 'default', 'vendor.test.sse', {
      'vendor.test.paced': {
        nodes: [
          { id: 'first', typeId: 'core.noop', config: { v: 1 } },
          { id: 'wait1', typeId: 'core.delay', config: { ms: 700 } },
          { id: 'middle', typeId: 'core.noop', config: { v: 2 } },
          { id: 'wait2', typeId: 'core.delay', config: { ms: 700 } },
          { id: 'last', typeId: 'core.noop', config: { v: 3 } },
        ],
        edges: [{ from: 'first', to: 'wait1' }, { from: 'wait1', to: 'middle' }, { from: 'middle', to: 'wait2' }, { from: 'wait2', to: 'last' }],
      },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('delivers each event as it happens, through to run.completed, then ends the stream', async () => {
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.paced' } });
    const runId = created.body.runId as string;
    const statusAt: Record<string, Promise<string>> = {};
    const s = follow(port, `/v1/runs/${runId}/events?streamMode=debug`, key, (e) => {
      // While the first delay is in flight the run is still running: the event came live.
      if (e.type === 'node.started' && e.event.payload.nodeId === 'wait1') statusAt.wait1 = t.http('GET', `/v1/runs/${runId}`, { token: key }).then((r) => r.body.status);
    });
    const { ended } = await s.done;
    expect(ended).toBe(true); // the host closed the stream after the terminal event
    expect(s.status()).toBe(200);
    expect(String(s.headers()['content-type'])).toMatch(/^text\/event-stream/);
    const got = s.received;
    expect(got[got.length - 1].type).toBe('run.completed');
    expect(got.map((e) => e.id)).toEqual(got.map((_, i) => i + 1));
    expect(got.map((e) => e.event.sequence)).toEqual(got.map((e) => e.id));
    expectSchemaValid(got.map((e) => e.event));
    expect(await statusAt.wait1).toBe('running');
    // Arrival times follow the run's pace: the two 700 ms delays separate the events around them
    // (less the up to 250 ms the engine may hold replay-safe progress before writing it).
    const at = (type: string, nodeId?: string) => got.find((e) => e.type === type && (!nodeId || e.event.payload.nodeId === nodeId))!.at;
    expect(at('node.completed', 'wait1') - at('node.started', 'wait1')).toBeGreaterThanOrEqual(300);
    expect(at('run.completed') - at('node.started', 'wait1')).toBeGreaterThanOrEqual(900);
    expect(at('node.started', 'wait1') - at('run.started')).toBeLessThan(600);
    // The stream carried exactly the durable log.
    expect(got.map((e) => e.event.eventId)).toEqual((await runEvents(t, key, runId)).map((e) => e.eventId));
  });

  it('resumes a dropped stream with Last-Event-ID mid-run: no gap, no repeat, live to the end', async () => {
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.paced' } });
    const runId = created.body.runId as string;
    // Drop the connection as soon as the first delay has started.
    const first = follow(port, `/v1/runs/${runId}/events?streamMode=debug`, key, (e, stop) => {
      if (e.type === 'node.started' && e.event.payload.nodeId === 'wait1') stop();
    });
    expect((await first.done).ended).toBe(false);
    const lastSeen = first.received[first.received.length - 1].id;
    expect((await t.http('GET', `/v1/runs/${runId}`, { token: key })).body.status).toBe('running');

    const second = follow(port, `/v1/runs/${runId}/events?streamMode=debug`, key, () => undefined, String(lastSeen));
    expect((await second.done).ended).toBe(true);
    expect(second.received[0].id).toBe(lastSeen + 1);
    expect(second.received[second.received.length - 1].type).toBe('run.completed');
    // Some of the resumed events happened after the reconnect (still live), and together they are the whole log.
    expect(second.received[second.received.length - 1].at - second.received[0].at).toBeGreaterThanOrEqual(300);
    const all = [...first.received, ...second.received].map((e) => e.event);
    expect(all.map((e) => e.sequence)).toEqual(all.map((_, i) => i + 1));
    expect(all.map((e) => e.eventId)).toEqual((await runEvents(t, key, runId)).map((e) => e.eventId));
    expectSchemaValid(all);
  });

  it('answers 404 on the socket for another tenant before any stream opens', async () => {
    const created = await t.http('POST', '/v1/runs', { token: key, body: { workflowId: 'vendor.test.paced' } });
    const stranger = await t.key({ tenant: 'stranger', scopes: ['runs:read'] });
    const s = follow(port, `/v1/runs/${created.body.runId}/events`, stranger, () => undefined);
    await s.done.catch(() => undefined);
    expect(s.status()).toBe(404);
    expect(s.received).toEqual([]);
  });
});

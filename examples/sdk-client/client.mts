/**
 * A typed client of an OpenWOP host, generated from its OpenAPI document (README: "Generating a client"):
 *
 *   npx openapi-typescript@7.13.0 http://127.0.0.1:8080/v1/openapi.json -o openapi.d.ts
 *   npm install openapi-fetch@0.17.0
 *
 * Usage: node client.mjs <baseUrl> <apiKey> <workflowId>. Starts a run, reads it back until it ends,
 * lists the compact tool catalog and prints what it saw as one JSON line.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './openapi.js';

type RunSnapshot = components['schemas']['RunSnapshot'];
type ErrorEnvelope = components['schemas']['ErrorEnvelope'];

const [baseUrl, apiKey, workflowId] = process.argv.slice(2);
if (!baseUrl || !apiKey || !workflowId) throw new Error('usage: node client.mjs <baseUrl> <apiKey> <workflowId>');
const api = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${apiKey}` } });

function fail(what: string, error: ErrorEnvelope | undefined, status: number): never {
  throw new Error(`${what}: ${status} ${error?.error ?? ''} ${error?.message ?? ''}`);
}

const created = await api.POST('/v1/runs', {
  body: { workflowId, inputs: { greeting: 'hello' }, configurable: { maxLoopIterations: 10, runTimeoutMs: 60_000 } },
  headers: { 'Idempotency-Key': `sdk-example-${workflowId}` },
});
if (!created.data) fail('create the run', created.error, created.response.status);
const runId: string = created.data.runId;

let run: RunSnapshot | undefined;
for (let i = 0; i < 200; i++) {
  const read = await api.GET('/v1/runs/{runId}', { params: { path: { runId } } });
  if (!read.data) fail('read the run', read.error, read.response.status);
  run = read.data;
  if (['completed', 'failed', 'cancelled'].includes(run.status)) break;
  await new Promise((r) => setTimeout(r, 50));
}

const unknown = await api.GET('/v1/runs/{runId}', { params: { path: { runId: 'no-such-run' } } });
const tools = await api.GET('/v1/compact-tools', {});
if (!tools.data) fail('list the tools', tools.error, tools.response.status);

console.log(
  JSON.stringify({
    created: created.response.status,
    runId,
    status: run?.status,
    workflowId: run?.workflowId,
    configurable: run?.configurable,
    unknown: { status: unknown.response.status, error: unknown.error?.error },
    toolIds: tools.data.tools.map((t) => t.toolId),
  }),
);

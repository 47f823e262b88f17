import { ArtifactRegistryService } from '../../src/platform/artifacts/artifact-registry.service';
import { SchemaRegistry } from '../../src/platform/schemas/schema-registry';
import type { HttpResult, TestApp } from '../support/test-app';

export interface TestEvent {
  eventId: string;
  runId: string;
  type: string;
  payload: Record<string, unknown>;
  timestamp: string;
  sequence: number;
  nodeId?: string;
}

/** A workflow-chain pack with the given chains (`{chainId: dag}`). */
export function chainPack(name: string, chains: Record<string, Record<string, unknown>>): Record<string, unknown> {
  return {
    name,
    version: '1.0.0',
    kind: 'workflow-chain',
    engines: { openwop: '^1.0.0' },
    chains: Object.entries(chains).map(([chainId, dag]) => ({ chainId, version: '1.0.0', label: chainId, description: `chain ${chainId}`, parameters: { type: 'object' }, dag })),
  };
}

export async function installChains(t: TestApp, tenant: string, name: string, chains: Record<string, Record<string, unknown>>): Promise<void> {
  await t.app.get(ArtifactRegistryService).install('workflow-chain-pack', chainPack(name, chains), { tenant, principal: 'tester' }, 'test');
}

/** `n` core.noop nodes in a chain. */
export function noopChain(n: number): Record<string, unknown> {
  const nodes = Array.from({ length: n }, (_, i) => ({ id: `n${i + 1}`, typeId: 'core.noop', config: { step: i + 1 } }));
  return { nodes, edges: nodes.slice(1).map((x, i) => ({ from: nodes[i].id, to: x.id })) };
}

export async function waitForStatus(t: TestApp, token: string, runId: string, statuses: string[], timeoutMs = 15_000): Promise<Record<string, any>> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await t.http('GET', `/v1/runs/${runId}`, { token });
    if (r.status === 200 && statuses.includes(r.body.status)) return r.body;
    if (Date.now() > until) throw new Error(`run ${runId} did not reach ${statuses.join('|')}: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

export async function runEvents(t: TestApp, token: string, runId: string): Promise<TestEvent[]> {
  const r = await t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=0`, { token });
  if (r.status !== 200) throw new Error(`poll ${r.status}: ${r.text}`);
  return r.body.events as TestEvent[];
}

const PAYLOADS = 'https://openwop.dev/spec/v1/run-event-payloads.schema.json';
const PAYLOAD_DEF: Record<string, string> = {
  'run.started': 'runStarted',
  'run.completed': 'runCompleted',
  'run.failed': 'runFailed',
  'run.cancelled': 'runCancelled',
  'node.started': 'nodeStarted',
  'node.completed': 'nodeCompleted',
  'node.failed': 'nodeFailed',
  'node.skipped': 'nodeSkipped',
  'node.cancelled': 'nodeCancelled',
  'node.suspended': 'nodeSuspended',
  'node.resumed': 'nodeResumed',
  'interrupt.requested': 'interruptRequested',
  'interrupt.resolved': 'interruptResolved',
  'cap.breached': 'capBreached',
  'agent.toolCalled': 'agentToolCalled',
  'agent.toolReturned': 'agentToolReturned',
  'tool.session.opened': 'toolSessionOpened',
  'tool.session.closed': 'toolSessionClosed',
  'provider.usage': 'providerUsage',
  'artifact.created': 'artifactCreated',
  'budget.reserved': 'budgetReserved',
  'budget.consumed': 'budgetConsumed',
  'budget.threshold.crossed': 'budgetThresholdCrossed',
  'budget.exhausted': 'budgetExhausted',
  'node.retried': 'nodeRetried',
  'run.dead_lettered': 'runDeadLettered',
};

/** The host's own (vendor-prefixed) run events and the schemas/ file their payloads validate against. */
const HOST_PAYLOAD: Record<string, string> = {
  'openwopHost.tool.dispatchDecided': 'tool-dispatch-decided',
};

/** Every event validates against run-event.schema.json and its payload against its run-event-payloads $def (or the host's schema of a vendor event). */
export function expectSchemaValid(events: TestEvent[]): void {
  const registry = SchemaRegistry.shared();
  for (const e of events) {
    const env = registry.validate('run-event', e);
    if (env.length) throw new Error(`${e.type} is not a valid RunEvent: ${JSON.stringify(env)}`);
    const hostSchema = HOST_PAYLOAD[e.type];
    const def = PAYLOAD_DEF[e.type];
    if (!def && !hostSchema) throw new Error(`unexpected event type ${e.type}`);
    const problems = hostSchema ? registry.validate(hostSchema, e.payload) : registry.validateWith({ $ref: `${PAYLOADS}#/$defs/${def}` }, e.payload);
    if (problems.length) throw new Error(`${e.type} payload invalid: ${JSON.stringify(problems)} ${JSON.stringify(e.payload)}`);
  }
}

/** Every node completed at most once (by event and by row). */
export async function expectNoDoubleCompletion(t: TestApp): Promise<void> {
  const dup = (await t.ds.query(
    `SELECT "stream_key", "node_id", count(*) AS n FROM "event" WHERE "event_type_name"("code", "type") = 'node.completed' GROUP BY 1, 2 HAVING count(*) > 1`,
  )) as unknown[];
  expect(dup).toEqual([]);
}

/**
 * Requests under either protocol major for one caller: `at(1, …)` is `/v1<op>` header-less, `at(2, …)` is `<op>` with
 * `OpenWOP-Version: 2.0`; `idAt` names a run id as that major's paths do (bound to the tenant under major 2), `bare`
 * takes a bound id back.
 */
export function perMajor(t: () => TestApp, token: () => string, tenant: string) {
  const at = (major: 1 | 2, method: string, op: string, body?: unknown): Promise<HttpResult> =>
    major === 1 ? t().http(method, `/v1${op}`, { token: token(), body }) : t().http(method, op, { token: token(), body, headers: { 'openwop-version': '2.0' } });
  const idAt = (major: 1 | 2, bare: string) => (major === 1 ? bare : `${tenant}~2F${bare}`);
  const bare = (id: string) => id.slice(id.lastIndexOf('/') + 1);
  return { at, idAt, bare };
}

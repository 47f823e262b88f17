/**
 * Clients in other languages from the committed proto: Python stubs are generated from
 * schemas/grpc/openwop.proto (and google/rpc/status.proto beside it) without a single compiler
 * warning, and the documented Python example (examples/grpc-client/run_and_approve.py) drives a
 * test host over them: it finds the workflow in ListWorkflows, creates a run, follows its events, finds the waiting run and its gate in
 * ListRuns and ListApprovals page by page, approves it, and reads the finished run, its inputs and
 * outputs, the tool list and an error envelope. What it reports is checked against REST.
 *
 * Needs a Python 3 with grpcio and protobuf (Debian: python3-grpcio, python3-protobuf) and a
 * generator that reads proto3 `optional` fields (protoc 3.15+): `python3 -m grpc_tools.protoc`
 * when its protoc is that recent, else Debian's protoc with its gRPC Python plugin
 * (protobuf-compiler, protobuf-compiler-grpc). `.ci/run` installs them; without them the test is
 * skipped and says why. Go stubs are generated when a Go toolchain and its protoc plugins are
 * installed, else that test is skipped with the reason.
 */
import { execFile, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../src/platform/project-root';
import { ENGINE_PROTO_DIR } from '../../src/transport/grpc/engine-proto';
import { installChains, noopChain, waitForStatus } from '../runs/run-kit';
import { createGrpcTestApp, GrpcTestApp } from './grpc-kit';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const run = promisify(execFile);
const EXAMPLE = path.join(PROJECT_ROOT, 'examples', 'grpc-client', 'run_and_approve.py');
const PROTOS = ['openwop.proto', 'google/rpc/status.proto'];

/** A generator command line for Python stubs into `out`, or why there is none. */
interface Generator {
  name: string;
  command: string;
  args(out: string): string[];
}

function works(command: string, args: string[]): boolean {
  const r = spawnSync(command, args, { encoding: 'utf8' });
  return r.status === 0;
}

/** The first Python that imports grpc and protobuf (the PATH's, then Debian's). */
function findPython(): string | undefined {
  const candidates = [process.env.OPENWOP_TEST_PYTHON, 'python3', '/usr/bin/python3'].filter((c): c is string => !!c);
  return [...new Set(candidates)].find((p) => works(p, ['-c', 'import grpc, google.protobuf']));
}

/** Compiles the proto into a scratch folder: the compiler's stderr, or undefined when it cannot start. */
function tryGenerate(g: Generator): { status: number | null; stderr: string } {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-pygen-probe-'));
  try {
    const r = spawnSync(g.command, g.args(out), { encoding: 'utf8', cwd: PROJECT_ROOT });
    return { status: r.error ? null : r.status, stderr: `${r.stderr ?? ''}${r.error ? r.error.message : ''}` };
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

function findGenerator(python: string): { generator?: Generator; tried: string[] } {
  const tried: string[] = [];
  const include = ['-I', ENGINE_PROTO_DIR];
  if (works(python, ['-c', 'import grpc_tools.protoc'])) {
    const g: Generator = { name: `${python} -m grpc_tools.protoc`, command: python, args: (out) => ['-m', 'grpc_tools.protoc', ...include, `--python_out=${out}`, `--grpc_python_out=${out}`, ...PROTOS] };
    const r = tryGenerate(g);
    if (r.status === 0) return { generator: g, tried };
    tried.push(`${g.name} cannot compile the proto (${/optional/.test(r.stderr) ? 'its protoc predates proto3 optional fields' : r.stderr.split('\n')[0]})`);
  } else {
    tried.push('no grpc_tools module (Debian python3-grpc-tools)');
  }
  const plugin = ['/usr/bin/grpc_python_plugin', spawnSync('sh', ['-c', 'command -v grpc_python_plugin'], { encoding: 'utf8' }).stdout.trim()].find((p) => p && fs.existsSync(p));
  if (works('protoc', ['--version']) && plugin) {
    const g: Generator = { name: `protoc with ${plugin}`, command: 'protoc', args: (out) => [...include, `--python_out=${out}`, `--grpc_out=${out}`, `--plugin=protoc-gen-grpc=${plugin}`, ...PROTOS] };
    const r = tryGenerate(g);
    if (r.status === 0) return { generator: g, tried };
    tried.push(`${g.name} cannot compile the proto (${r.stderr.split('\n')[0]})`);
  } else {
    tried.push('no protoc with grpc_python_plugin (Debian protobuf-compiler, protobuf-compiler-grpc)');
  }
  return { tried };
}

const python = findPython();
const found = python ? findGenerator(python) : { tried: [] as string[] };
const reason = !python
  ? 'no Python 3 with grpcio and protobuf (Debian python3-grpcio, python3-protobuf; .ci/run installs them)'
  : !found.generator
    ? `no generator reads this proto: ${found.tried.join('; ')} (.ci/run installs protobuf-compiler and protobuf-compiler-grpc)`
    : undefined;
if (reason) process.stderr.write(`Python gRPC client test skipped: ${reason}\n`);
const pythonIt = reason ? it.skip : it;

const goReason = ((): string | undefined => {
  if (!works('go', ['version'])) return 'no Go toolchain installed';
  if (!works('protoc', ['--version'])) return 'no protoc installed';
  const missing = ['protoc-gen-go', 'protoc-gen-go-grpc'].filter((p) => !works('sh', ['-c', `command -v ${p}`]));
  return missing.length ? `the Go protoc plugins are not installed (${missing.join(', ')})` : undefined;
})();
if (goReason) process.stderr.write(`Go gRPC stubs test skipped: ${goReason}\n`);
const goIt = goReason ? it.skip : it;

describe('gRPC clients in other languages, from schemas/grpc/openwop.proto', () => {
  let g: GrpcTestApp;
  let token: string;
  let stubs: string;
  let otherRun: string;

  beforeAll(async () => {
    if (reason) return;
    stubs = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-pystubs-'));
    g = await createGrpcTestApp({ env: { OPENWOP_SCHEDULER_ENABLED: 'false' } });
    token = await g.t.key({ scopes: ['runs:create', 'runs:read', 'approvals:respond', 'tools:read'] });
    // Two chains, so the example walks ListWorkflows' pages to find the one it starts.
    await installChains(g.t, 'default', 'vendor.test.grpcpy-first', { 'vendor.test.grpcpy.a-first': noopChain(1) });
    await installChains(g.t, 'default', 'vendor.test.grpcpy', {
      'vendor.test.grpcpy.release': {
        nodes: [
          { id: 'gate', typeId: 'core.approval', config: { title: 'Publish release {{inputs.version}}?', requiredApprovals: 1 } },
          { id: 'greet', typeId: 'core.noop', config: { greeting: 'hello {{inputs.who}}', version: '{{inputs.version}}' } },
        ],
        edges: [{ from: 'gate', to: 'greet' }],
      },
    });
    // Another run waiting at a gate, so that the example has to walk a page to find its own.
    const other = await g.t.http('POST', '/v1/runs', { token, body: { workflowId: 'vendor.test.grpcpy.release', inputs: { who: 'nobody', version: '0.0.1' } } });
    expect(other.status).toBe(201);
    otherRun = other.body.runId;
    await waitForStatus(g.t, token, otherRun, ['waiting-approval']);
  });

  afterAll(async () => {
    if (otherRun) await g.t.http('POST', `/v1/runs/${otherRun}/cancel`, { token, body: {} });
    await g?.close();
    if (stubs) fs.rmSync(stubs, { recursive: true, force: true });
  });

  pythonIt(`generates the Python stubs without a warning${reason ? ` (skipped: ${reason})` : ''}`, () => {
    const r = spawnSync(found.generator!.command, found.generator!.args(stubs), { encoding: 'utf8', cwd: PROJECT_ROOT });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    for (const f of ['openwop_pb2.py', 'openwop_pb2_grpc.py', path.join('google', 'rpc', 'status_pb2.py')]) expect([f, fs.existsSync(path.join(stubs, f))]).toEqual([f, true]);
  });

  pythonIt(`the Python example creates, lists, follows and approves a run over the stubs${reason ? ` (skipped: ${reason})` : ''}`, async () => {
    const { stdout } = await run(python!, [EXAMPLE, 'vendor.test.grpcpy.release', JSON.stringify({ who: 'world', version: '1.2.3', nested: { list: [1, 'two', null] } })], {
      env: { ...process.env, OPENWOP_GRPC_STUBS: stubs, OPENWOP_GRPC_TARGET: g.target, OPENWOP_API_KEY: token, PYTHONDONTWRITEBYTECODE: '1' },
      timeout: 60_000,
    });
    const report: Json = JSON.parse(stdout.trim().split('\n').pop()!);
    const runId: string = report.created.runId;
    expect(report.created).toMatchObject({ status: expect.any(String), eventsUrl: `/v1/runs/${runId}/events`, statusUrl: `/v1/runs/${runId}` });

    // Found among the installed workflows (walking ListWorkflows one per page), with its declared inputs.
    expect(report.workflow).toEqual({ page: 2, name: 'vendor.test.grpcpy.release', parameters: { type: 'object' } });

    // Listed, one per page, newest first: its run and the other waiting one, their gates, its gate's title rendered.
    expect(report.waitingRuns).toEqual([{ page: 1, runId }, { page: 2, runId: otherRun }]);
    expect(report.pendingGates).toEqual([{ page: 1, runId }, { page: 2, runId: otherRun }]);
    expect(report.listedRun).toEqual({ status: 'waiting-approval', inputs: { who: 'world', version: '1.2.3', nested: { list: [1, 'two', null] } } });
    expect(report.listedApproval).toEqual({ title: 'Publish release 1.2.3?', nodeId: 'gate', state: 'pending' });
    expect(report.approved).toMatchObject({ runId, nodeId: 'gate' });

    // Followed: the events in sequence order, the suspension, the resumption and the end, as REST has them.
    const types = report.events.map((e: Json) => e.type);
    expect(types).toEqual(expect.arrayContaining(['run.started', 'node.suspended', 'node.completed', 'run.completed']));
    expect(types[types.length - 1]).toBe('run.completed');
    const restEvents = await g.t.http('GET', `/v1/runs/${runId}/events/poll?lastSequence=0`, { token });
    const updates = restEvents.body.events.filter((e: Json) => types.includes(e.type)).map((e: Json) => ({ sequence: e.sequence, type: e.type, nodeId: e.nodeId ?? '' }));
    expect(report.events.map((e: Json) => ({ ...e, nodeId: e.nodeId ?? '' }))).toEqual(updates);

    // The finished run, read back as its REST body through the documented JSON-in-Struct mapping.
    const viaRest = await g.t.http('GET', `/v1/runs/${runId}`, { token });
    expect(viaRest.body.status).toBe('completed');
    expect(report.run).toEqual(viaRest.body);
    expect(report.inputs).toEqual({ who: 'world', version: '1.2.3', nested: { list: [1, 'two', null] } });
    expect(report.outputs).toEqual(viaRest.body.outputs);
    expect(JSON.stringify(report.outputs)).toContain('hello world');

    const tools = await g.t.http('GET', '/v1/tools', { token });
    expect(report.tools).toEqual(tools.body.map((t: Json) => t.toolId));
    expect(report.missingRun).toEqual({ code: 'NOT_FOUND', envelope: (await g.t.http('GET', '/v1/runs/00000000-0000-4000-8000-000000000000', { token })).body });
  });

  goIt(`generates the Go stubs without a warning${goReason ? ` (skipped: ${goReason})` : ''}`, () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-gostubs-'));
    try {
      const r = spawnSync('protoc', ['-I', ENGINE_PROTO_DIR, `--go_out=${out}`, '--go_opt=paths=source_relative', `--go-grpc_out=${out}`, '--go-grpc_opt=paths=source_relative', 'openwop.proto'], { encoding: 'utf8' });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      expect(fs.readFileSync(path.join(out, 'openwop.pb.go'), 'utf8')).toMatch(/^package openwopv1$/m);
      expect(fs.existsSync(path.join(out, 'openwop_grpc.pb.go'))).toBe(true);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });
});

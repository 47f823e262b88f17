import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createTestApp, TestApp } from '../support/test-app';
import { installChains, noopChain } from '../runs/run-kit';

/**
 * The README's client recipe, followed as a user would: generate the types from the committed
 * document with the pinned openapi-typescript, compile examples/sdk-client/client.mts against them and
 * the pinned openapi-fetch with the project's TypeScript (strict), and run it against a host
 * listening on a real port: it creates a run and reads it until it ends.
 */

const root = path.join(__dirname, '../..');

function node(args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => (err ? reject(new Error(`${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout)));
  });
}

describe('the README client recipe (openapi-typescript + openapi-fetch)', () => {
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openwop-sdk-'));
    // The client project resolves the host's pinned packages (openapi-fetch, @types/node) as its own.
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    fs.copyFileSync(path.join(root, 'examples/sdk-client/client.mts'), path.join(dir, 'client.mts'));
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noUncheckedIndexedAccess: true, types: ['node'], outDir: 'dist' }, files: ['client.mts', 'refused.mts'] }),
    );
    // Compiled with the client: each call below must be a type error (tsc fails on an unused @ts-expect-error),
    // so the types are as strict as the document, not `any`.
    fs.writeFileSync(
      path.join(dir, 'refused.mts'),
      [
        "import createClient from 'openapi-fetch';",
        "import type { paths } from './openapi.js';",
        "const api = createClient<paths>({ baseUrl: 'http://127.0.0.1:1' });",
        'export async function refused(): Promise<void> {',
        '  // @ts-expect-error a bound is an integer',
        "  await api.POST('/v1/runs', { body: { workflowId: 'w', configurable: { maxLoopIterations: 'ten' } } });",
        '  // @ts-expect-error workflowId is required',
        "  await api.POST('/v1/runs', { body: { inputs: {} } });",
        '  // @ts-expect-error no such route',
        "  await api.GET('/v1/host/sample/test/reset');",
        "  const one = await api.GET('/v1/tools/{toolId}', { params: { path: { toolId: 'x' } } });",
        '  // @ts-expect-error the standard view is one ToolDescriptor, never the compact list',
        '  one.data?.tools;',
        '}',
        '',
      ].join('\n'),
    );
    t = await createTestApp();
    await installChains(t, 'default', 'vendor.sdk.chains', { 'vendor.sdk.hello': noopChain(2) });
    await t.app.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('generates a client from the committed document, compiles it and drives a running host', async () => {
    await node([path.join(root, 'node_modules/openapi-typescript/bin/cli.js'), path.join(root, 'schemas/openapi.json'), '-o', path.join(dir, 'openapi.d.ts')], dir);
    await node([path.join(root, 'node_modules/typescript/bin/tsc'), '-p', path.join(dir, 'tsconfig.json')], dir);
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const key = await t.key({ scopes: ['runs:create', 'runs:read', 'tools:read'] });
    const out = await node([path.join(dir, 'dist/client.mjs'), `http://127.0.0.1:${port}`, key, 'vendor.sdk.hello'], dir);
    const seen = JSON.parse(out.trim().split('\n').pop()!);
    expect(seen).toEqual({
      created: 201,
      runId: expect.any(String),
      status: 'completed',
      workflowId: 'vendor.sdk.hello',
      configurable: { maxLoopIterations: 10, runTimeoutMs: 60_000 },
      unknown: { status: 404, error: 'not_found' },
      toolIds: expect.arrayContaining(['x-host-openwop-echo']),
    });
    // The run the client created is the host's, read back here too.
    expect((await t.http('GET', `/v1/runs/${seen.runId}`, { token: key })).body.status).toBe('completed');
  }, 120_000);
});

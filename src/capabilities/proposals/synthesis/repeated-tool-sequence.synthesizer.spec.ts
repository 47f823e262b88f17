import { RunToolTrace } from '@openwop-host/plugin-sdk';
import { SchemaRegistry } from '../../../platform/schemas/schema-registry';
import type { ProposalsSettings } from '../proposals.settings';
import { chainPack, RepeatedToolSequenceSynthesizer } from './repeated-tool-sequence.synthesizer';

const settings = { synthesis: { minRuns: 2, minSequenceLength: 2 } } as ProposalsSettings;
const trace = (runId: string, tools: string[]): RunToolTrace => ({
  runId,
  startedAt: '2026-01-01T00:00:00.000Z',
  // Deliberately out of order: the synthesizer orders by sequence.
  calls: tools.map((toolId, i) => ({ toolId, sequence: i + 1 })).reverse(),
});
const ctx = (traces: RunToolTrace[]) => ({ tenant: 't', traces, signal: new AbortController().signal });

describe('RepeatedToolSequenceSynthesizer', () => {
  const synth = new RepeatedToolSequenceSynthesizer(settings);

  it('proposes one chain per ordered sequence seen in at least minRuns runs', async () => {
    const drafts = await synth.synthesize(
      ctx([trace('r2', ['a:x', 'b:y']), trace('r1', ['a:x', 'b:y']), trace('r3', ['b:y', 'a:x']), trace('r4', ['a:x'])]),
    );
    expect(drafts).toHaveLength(1);
    expect(drafts[0]).toMatchObject({ kind: 'workflow-chain-pack', sourceRunIds: ['r1', 'r2'] });
    expect(drafts[0].evidenceKey).toMatch(/^tool-sequence:[0-9a-f]{64}$/);
    expect(drafts[0].rationale).not.toMatch(/secret|password/i);
  });

  it('derives the same evidence key and artifact from the same sequence whatever the runs', async () => {
    const a = await synth.synthesize(ctx([trace('r1', ['a:x', 'b:y']), trace('r2', ['a:x', 'b:y'])]));
    const b = await synth.synthesize(ctx([trace('r7', ['a:x', 'b:y']), trace('r8', ['a:x', 'b:y']), trace('r9', ['a:x', 'b:y'])]));
    expect(b[0].evidenceKey).toBe(a[0].evidenceKey);
    expect(b[0].artifact).toEqual(a[0].artifact);
  });

  it('proposes nothing below the thresholds', async () => {
    expect(await synth.synthesize(ctx([trace('r1', ['a:x', 'b:y'])]))).toEqual([]);
    expect(await synth.synthesize(ctx([trace('r1', ['a:x']), trace('r2', ['a:x'])]))).toEqual([]);
  });

  it('builds a chain pack that is a valid RFC 0013 manifest, calling the tools in order', () => {
    const pack = chainPack(['mcp:files/read', 'connector:mail/send', 'mcp:files/read'], 'ab'.repeat(32));
    expect(SchemaRegistry.shared().validate('workflow-chain-pack-manifest', pack)).toEqual([]);
    const dag = (pack.chains as Array<{ dag: { nodes: Array<{ config: { toolId: string } }>; edges: unknown[] } }>)[0].dag;
    expect(dag.nodes.map((n) => n.config.toolId)).toEqual(['mcp:files/read', 'connector:mail/send', 'mcp:files/read']);
    expect(dag.edges).toEqual([{ from: 'step-1', to: 'step-2' }, { from: 'step-2', to: 'step-3' }]);
  });
});

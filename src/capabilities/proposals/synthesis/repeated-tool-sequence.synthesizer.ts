import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ProposalDraft, ProposalSynthesizer, ProposalSynthesizerProvider, SynthesisContext } from '@openwop-host/plugin-sdk';
import { PROPOSALS_SETTINGS, ProposalsSettings } from '../proposals.settings';

/** Node typeId of a fragment node that calls one catalog tool (`config.toolId`). */
export const TOOL_CALL_TYPE_ID = 'core.tool.call';

const MAX_SOURCE_RUNS = 50;

/**
 * The built-in synthesizer: the same ordered sequence of tool calls seen in several runs becomes a
 * proposed `workflow-chain-pack` (RFC 0013) whose chain calls those tools in that order, with the
 * runs as provenance. The evidence is the sequence itself, so the same sequence never yields a second
 * draft (whatever happened to the first), however often synthesis runs.
 */
@Injectable()
@ProposalSynthesizer({ id: 'repeated-tool-sequence' })
export class RepeatedToolSequenceSynthesizer implements ProposalSynthesizerProvider {
  constructor(@Inject(PROPOSALS_SETTINGS) private readonly settings: ProposalsSettings) {}

  async synthesize(ctx: SynthesisContext): Promise<ProposalDraft[]> {
    const { minRuns, minSequenceLength } = this.settings.synthesis;
    const bySequence = new Map<string, { tools: string[]; runIds: Set<string> }>();
    for (const trace of ctx.traces) {
      const tools = [...trace.calls].sort((a, b) => a.sequence - b.sequence).map((c) => c.toolId);
      if (tools.length < minSequenceLength) continue;
      const key = JSON.stringify(tools);
      const group = bySequence.get(key) ?? { tools, runIds: new Set<string>() };
      group.runIds.add(trace.runId);
      bySequence.set(key, group);
    }
    const drafts: ProposalDraft[] = [];
    for (const [key, { tools, runIds }] of bySequence) {
      if (runIds.size < minRuns) continue;
      const digest = createHash('sha256').update(key, 'utf8').digest('hex');
      drafts.push({
        kind: 'workflow-chain-pack',
        title: `Chain of ${tools.length} tool calls seen in ${runIds.size} runs`,
        rationale: `The same ordered sequence of ${tools.length} tool calls (${tools.join(' → ')}) appeared in ${runIds.size} runs; packaging it as a chain makes it reusable in one step.`,
        artifact: chainPack(tools, digest),
        sourceRunIds: [...runIds].sort().slice(0, MAX_SOURCE_RUNS),
        synthesizerModel: 'openwop-host/repeated-tool-sequence@1',
        evidenceKey: `tool-sequence:${digest}`,
      });
    }
    return drafts;
  }
}

/** An RFC 0013 workflow-chain pack manifest with one chain calling `tools` in order. */
export function chainPack(tools: string[], digest: string): Record<string, unknown> {
  const id = `private.learned.chain-${digest.slice(0, 16)}`;
  const nodes = tools.map((toolId, i) => ({ id: `step-${i + 1}`, typeId: TOOL_CALL_TYPE_ID, name: toolId, config: { toolId } }));
  const edges = nodes.slice(1).map((n, i) => ({ from: nodes[i].id, to: n.id }));
  return {
    name: id,
    version: '1.0.0',
    kind: 'workflow-chain',
    description: `Learned from repeated runs: ${tools.join(' → ')}`,
    engines: { openwop: '^1.0.0' },
    chains: [
      {
        chainId: id,
        version: '1.0.0',
        label: tools.join(' → '),
        description: `Calls ${tools.length} tools in the order observed in repeated runs.`,
        parameters: { type: 'object', properties: {}, additionalProperties: false },
        dag: edges.length ? { nodes, edges } : { nodes },
      },
    ],
  };
}

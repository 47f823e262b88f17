import { link } from '../../routes';
import { Badge, duration, Facts, JsonBlock, Section, ShortId } from '../../ui';
import type { RunDefinition } from '../../api/runs';
import { renderTemplate } from '../../template';
import { nodeDuration, nodeInput, NodeView } from './run-state';

/** A tool a `core.tool` node calls, when its config names one literally (not through a template). */
function toolOf(n: NodeView): string | undefined {
  const id = n.typeId === 'core.tool' ? n.config?.toolId : undefined;
  return typeof id === 'string' && id && !id.includes('{{') ? id : undefined;
}

function at(ms: number | undefined): string {
  return ms === undefined ? '—' : new Date(ms).toLocaleString();
}

/**
 * One node of the run: its type, state, attempts, when it started and ended, durations, error, what it
 * was given (its config as filled from the run's inputs and earlier outputs, and the outputs of the nodes
 * before it) and what it answered.
 */
export function NodeDetail({ node, nodes, definition, runInputs, now, onClose }: { node: NodeView; nodes: readonly NodeView[]; definition: RunDefinition | undefined; runInputs: Record<string, unknown>; now: number; onClose: () => void }) {
  const d = nodeDuration(node, now);
  const input = nodeInput(node, definition, runInputs, nodes, renderTemplate);
  const first = node.segments[0]?.start;
  const last = node.segments.length ? node.segments[node.segments.length - 1].end : undefined;
  const tool = toolOf(node);
  return (
    <Section
      title={`Node ${node.id}`}
      actions={
        <button type="button" onClick={onClose}>
          Close node
        </button>
      }
    >
      <Facts
        items={[
          ['Status', <Badge value={node.status} />],
          ['Type', node.typeId ? <code>{node.typeId}</code> : '—'],
          node.attempt !== undefined && ['Attempt', `${node.attempt + 1}${node.starts && node.starts > 1 ? ` (started ${node.starts} times)` : ''}`],
          first !== undefined && ['Started', at(first)],
          first !== undefined && ['Ended', last !== undefined ? at(last) : 'not yet'],
          node.segments.length > 0 && ['Executing', duration(d.running)],
          d.waiting > 0 && ['Waiting for approval', duration(d.waiting)],
          tool && ['Tool', <a href={link.tool(tool)}>{tool}</a>],
          node.gateId && ['Approval gate', <ShortId id={node.gateId} what="gate id" href={link.approvals()} />],
          node.error && [
            'Error',
            <span class="run-error">
              <code>{node.error.code}</code> {node.error.message}
            </span>,
          ],
          !node.inDefinition && ['Note', 'Not in the run’s definition: known from its state and events only.'],
        ]}
      />
      <div class="two">
        {input.config !== undefined ? <JsonBlock label={`Input of ${node.id}: its config, templates filled`} value={input.config} /> : null}
        {Object.keys(input.upstream).length ? <JsonBlock label={`Outputs of the nodes before ${node.id}`} value={input.upstream} /> : null}
        {node.outputs !== undefined ? <JsonBlock label={`Output of ${node.id}`} value={node.outputs} /> : <p class="muted">No output yet.</p>}
      </div>
      {node.config ? (
        <details>
          <summary>Configuration as written</summary>
          <JsonBlock label={`Configuration of ${node.id}`} value={node.config} />
        </details>
      ) : null}
    </Section>
  );
}

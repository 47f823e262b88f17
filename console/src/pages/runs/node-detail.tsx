import { link } from '../../routes';
import { Badge, duration, Facts, JsonBlock, Section, ShortId } from '../../ui';
import { nodeDuration, NodeView } from './run-state';

/** A tool a `core.tool` node calls, when its config names one literally (not through a template). */
function toolOf(n: NodeView): string | undefined {
  const id = n.typeId === 'core.tool' ? n.config?.toolId : undefined;
  return typeof id === 'string' && id && !id.includes('{{') ? id : undefined;
}

/** One node of the run: its type, state, attempt, durations, error and configuration. */
export function NodeDetail({ node, now, onClose }: { node: NodeView; now: number; onClose: () => void }) {
  const d = nodeDuration(node, now);
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
          node.attempt !== undefined && ['Attempt', node.attempt],
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
      {node.config ? <JsonBlock label={`Configuration of ${node.id}`} value={node.config} /> : null}
    </Section>
  );
}

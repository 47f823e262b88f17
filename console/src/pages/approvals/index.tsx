import { useState } from 'preact/hooks';
import { Approval, ApprovalState, describeGate, GateView, listApprovals } from '../../api/approvals';
import { Page } from '../../api/paging';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { ChoiceFilter, DataTable, Notice, Section, ShortId, useLive, usePagedList, when } from '../../ui';
import { DecisionButtons, mayDecide } from './gate-decision';

const STATES: ApprovalState[] = ['pending', 'granted', 'denied', 'expired', 'cancelled'];

function subjectOf(g: GateView): string {
  if (g.runId) return `gate for run ${g.runId}${g.nodeId ? ` node ${g.nodeId}` : ''}`;
  if (g.proposalId) return `gate for proposal ${g.proposalId}`;
  return `gate ${g.approval.id}`;
}

/**
 * Every approval gate of the tenant (pending ones first by default): what it holds (a run's step, with its
 * run, node and workflow, or a proposal), its title, who asked, the quorum and the deadline, and Grant/Deny
 * for a credential holding the gate's required scope.
 */
export function ApprovalsPage({ identity }: { identity: Identity }) {
  const [state, setState] = useState<ApprovalState | ''>('pending');
  const [notice, setNotice] = useState<string | null>(null);
  const list = usePagedList(
    async (cursor): Promise<Page<GateView>> => {
      const page = await listApprovals({ state: state || undefined, cursor });
      return { items: page.items.map(describeGate), nextCursor: page.nextCursor };
    },
    [state],
    (g) => g.approval.id,
  );
  // Gates requested and decided (here or anywhere) are events of the tenant's host stream.
  useLive(list.reload, { prefixes: ['interrupt.', 'approval.'], stream: can(identity, 'runs:read') });
  const decided = (g: GateView, a: Approval) => {
    setNotice(`${a.state === 'pending' ? `Granted (${a.granted} of ${a.quorum}): the gate waits for more approvers` : `The gate is now ${a.state}`}: ${g.title ?? subjectOf(g)}.`);
    list.reload();
  };
  return (
    <Section title="Approval gates">
      <Notice text={notice} />
      <DataTable
        list={list}
        caption="Approval gates"
        noun={['gate', 'gates']}
        empty={state === 'pending' ? 'No gate is waiting for a decision.' : 'No gate.'}
        rowKey={(g) => g.approval.id}
        filters={<ChoiceFilter label="State" all="All states" options={STATES} value={state} onChange={(s) => (setNotice(null), setState(s))} />}
        columns={[
          { header: 'Title', cell: (g) => g.title ?? <span class="muted">—</span> },
          {
            header: 'Subject',
            cell: (g) =>
              g.runId ? (
                <>
                  run <ShortId id={g.runId} what="run" href={link.run(g.runId)} />
                </>
              ) : g.proposalId ? (
                <>
                  proposal <ShortId id={g.proposalId} what="proposal" href={link.proposal(g.proposalId)} />
                </>
              ) : (
                <code>{g.approval.subject.kind}</code>
              ),
          },
          { header: 'Node', cell: (g) => (g.nodeId ? <code>{g.nodeId}</code> : '—') },
          { header: 'Workflow', cell: (g) => (g.workflowId ? <code>{g.workflowId}</code> : '—') },
          { header: 'Requested by', cell: (g) => g.approval.requestedBy },
          { header: 'Quorum', cell: (g) => `${g.approval.granted} of ${g.approval.quorum}` },
          { header: 'Kind', cell: (g) => g.approval.kind },
          { header: state === 'pending' ? 'Expires' : 'Decided', cell: (g) => when(state === 'pending' ? g.approval.expiresAt : (g.approval.decidedAt ?? g.approval.expiresAt)) },
          {
            header: 'Decision',
            cell: (g) =>
              g.approval.state !== 'pending' ? (
                g.approval.state
              ) : mayDecide(identity, g.approval) ? (
                <DecisionButtons approval={g.approval} subject={subjectOf(g)} onDecided={(a) => decided(g, a)} />
              ) : (
                <span class="muted">needs {g.approval.requiredScope}</span>
              ),
          },
        ]}
      />
    </Section>
  );
}

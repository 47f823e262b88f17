import { useState } from 'preact/hooks';
import { listProposals, PROPOSAL_STATES, ProposalState } from '../../api/proposals';
import { link } from '../../routes';
import { can, Identity } from '../../session';
import { Badge, ChoiceFilter, DataTable, Section, useLive, usePagedList, when } from '../../ui';
import { ProposalDetail } from './detail';

/** The tenant's proposals by state, and the proposal the address names (`#/proposals/<id>`). */
export function ProposalsPage({ identity, selected }: { identity: Identity; selected?: string }) {
  const [state, setState] = useState<ProposalState | ''>('');
  const list = usePagedList((cursor) => listProposals({ state: state || undefined, cursor }), [state], (p) => p.id);
  // Proposals created, revised, applied, and the gates of their applies: events of the host stream.
  useLive(list.reload, { prefixes: ['proposal.', 'approval.', 'import.'], stream: can(identity, 'runs:read') });
  return (
    <div class="split">
      <Section title="Proposals">
        <DataTable
          list={list}
          caption="Proposals"
          noun={['proposal', 'proposals']}
          rowKey={(p) => p.id}
          selected={selected}
          filters={<ChoiceFilter label="State" all="All states" options={PROPOSAL_STATES} value={state} onChange={setState} />}
          columns={[
            { header: 'Title', cell: (p) => <a href={link.proposal(p.id)}>{p.title ?? p.id}</a> },
            { header: 'Kind', cell: (p) => p.kind },
            { header: 'State', cell: (p) => <Badge value={p.state} /> },
            { header: 'Updated', cell: (p) => when(p.updatedAt ?? p.createdAt) },
          ]}
        />
      </Section>
      {selected ? <ProposalDetail key={selected} id={selected} identity={identity} onChanged={list.reload} /> : <p class="muted">Select a proposal to review it.</p>}
    </div>
  );
}

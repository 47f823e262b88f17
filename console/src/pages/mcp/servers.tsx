import { useState } from 'preact/hooks';
import { approveToolPin, DEFINITION_CHANGED, listMcpServers, listToolPins, McpServer, PinState, ToolPin } from '../../api/mcp';
import { Badge, ChoiceFilter, DataTable, ErrorBanner, loadedList, Notice, Section, useAction, useLive, useLoad, when } from '../../ui';

const PIN_STATES: PinState[] = ['held', 'approved'];

const pinName = (p: Pick<ToolPin, 'serverId' | 'toolName'>) => `${p.serverId}.${p.toolName}`;

/** A definition digest shown short (`sha256:` and 12 hex digits), the full digest in its tooltip. */
export function Digest({ value }: { value: string }) {
  const short = value.length > 19 ? `${value.slice(0, 19)}…` : value;
  return (
    <code class="digest" title={value}>
      {short}
    </code>
  );
}

function revisionOf(s: McpServer): string {
  if (s.negotiatedVersion) return s.downgraded ? `${s.negotiatedVersion} (downgraded)` : s.negotiatedVersion;
  return s.refused ? 'refused' : 'not negotiated yet';
}

/** The tenant's MCP servers: how each is reached, its downgrade policy, the revision settled with it, and its held tools. */
function Servers({ refresh }: { refresh: number }) {
  const servers = useLoad(listMcpServers, [refresh]);
  // No stream reports a server's negotiation or a definition that changed: read again every 30 s while shown.
  useLive(servers.reload, { pollMs: 30_000 });
  return (
    <Section title="MCP servers">
      <DataTable
        list={loadedList(servers)}
        caption="MCP servers"
        noun={['server', 'servers']}
        empty="No MCP server is configured for this tenant (tools.mcpServers in the host config)."
        rowKey={(s) => s.serverId}
        columns={[
          { header: 'Server', cell: (s) => <code>{s.serverId}</code> },
          { header: 'Transport', cell: (s) => s.transport },
          { header: 'Downgrade', cell: (s) => <span title="Whether the 2025-06-18 handshake may be used when the server does not speak the current revision">{s.downgrade}</span> },
          { header: 'Requested', cell: (s) => <code>{s.requestedVersion}</code> },
          { header: 'Negotiated', cell: (s) => (s.negotiatedVersion ? <code>{s.negotiatedVersion}</code> : <span class="muted">{revisionOf(s)}</span>) },
          { header: 'Era', cell: (s) => s.era ?? '—' },
          { header: 'Downgraded', cell: (s) => (s.downgraded === undefined ? '—' : s.downgraded ? <strong class="warn-text">yes</strong> : 'no') },
          { header: 'Refused', cell: (s) => (s.refused ? <strong class="danger-text">{`${s.refused.reason ?? 'refused'}${s.refused.requested ? ` (requested ${s.refused.requested})` : ''}`}</strong> : '—') },
          { header: 'Held tools', class: 'num', cell: (s) => (s.heldTools ? <strong class="warn-text">{`${s.heldTools} held`}</strong> : '0') },
          { header: 'Negotiated at', cell: (s) => when(s.negotiatedAt) },
        ]}
      />
    </Section>
  );
}

/**
 * The tenant's pinned tool definitions, held ones first: a held tool's server now serves another definition
 * than the approved one, so it is out of the catalog until an operator approves the digest it serves now.
 */
function Pins({ refresh, onApproved }: { refresh: number; onApproved: () => void }) {
  const [state, setState] = useState<PinState | ''>('');
  const [notice, setNotice] = useState<string | null>(null);
  const [approving, setApproving] = useState<ToolPin | null>(null);
  const pins = useLoad(() => listToolPins(state || undefined), [state, refresh]);
  useLive(pins.reload, { pollMs: 30_000 });
  const action = useAction();
  const held = pins.data?.filter((p) => p.state === 'held').length ?? 0;
  const approve = (pin: ToolPin) => {
    setNotice(null);
    setApproving(pin);
    void action.run('approve', () => approveToolPin(pin)).then((r) => {
      if (r) setNotice(`${pinName(r)} approved at ${r.approvedDigest}: the tool is back in the catalog.`);
      // Approved or refused, the pins on screen are read again (a refusal means the server changed the definition again).
      onApproved();
    });
  };
  const changed = action.error?.error === DEFINITION_CHANGED ? action.error : null;
  const observed = (changed?.details as { observedDigest?: unknown } | undefined)?.observedDigest;
  return (
    <Section title="Pinned tool definitions">
      <Notice text={notice} />
      {changed && approving ? (
        <div class="error" role="alert">
          <strong>
            <code class="error-code">{changed.error}</code>
            <span class="muted"> (HTTP {changed.status})</span>
          </strong>
          <p class="error-message">{changed.message}</p>
          <p>
            {`The definition of ${pinName(approving)} changed again after it was shown${typeof observed === 'string' ? `: the server now serves ${observed}` : ''}. Nothing was approved. The list below is read again; review the digest it shows now before approving.`}
          </p>
        </div>
      ) : (
        <ErrorBanner error={action.error} />
      )}
      {held ? (
        <p class="callout warn-callout">
          <strong>{held === 1 ? '1 tool is held' : `${held} tools are held`}</strong>: its server now serves another definition than the one approved. A held tool is out of the catalog and
          its calls are refused until its new definition is approved.
        </p>
      ) : null}
      <DataTable
        list={loadedList(pins)}
        caption="Pinned tool definitions"
        noun={['pin', 'pins']}
        empty={state === 'held' ? 'No tool is held: every server serves the definitions approved.' : 'No tool definition pinned yet (pins are recorded when the catalog first lists a tool).'}
        rowKey={pinName}
        filters={<ChoiceFilter label="State" all="All states" options={PIN_STATES} value={state} onChange={(s) => (setNotice(null), action.clear(), setState(s))} />}
        columns={[
          { header: 'Tool', cell: (p) => <code>{pinName(p)}</code> },
          { header: 'State', cell: (p) => <Badge value={p.state} /> },
          { header: 'Approved digest', cell: (p) => <Digest value={p.approvedDigest} /> },
          {
            header: 'Serves now',
            cell: (p) => (p.observedDigest === p.approvedDigest ? <span class="muted">the approved definition</span> : <Digest value={p.observedDigest} />),
          },
          { header: 'Changed', cell: (p) => when(p.changedAt) },
          { header: 'Approved', cell: (p) => (p.approvedAt ? `${when(p.approvedAt)}${p.approvedBy ? ` by ${p.approvedBy}` : ''}` : 'on first sight') },
          {
            header: 'Action',
            cell: (p) =>
              p.state === 'held' ? (
                <button type="button" class="primary" disabled={Boolean(action.busy)} onClick={() => approve(p)} aria-label={`Approve the definition ${pinName(p)} serves now (${p.observedDigest})`}>
                  Approve
                </button>
              ) : null,
          },
        ]}
      />
    </Section>
  );
}

/** Servers and pins together: approving a held tool reads both again (the server's held count changes too). */
export function ServersAndPins() {
  const [refresh, setRefresh] = useState(0);
  return (
    <>
      <Servers refresh={refresh} />
      <Pins refresh={refresh} onApproved={() => setRefresh((r) => r + 1)} />
    </>
  );
}

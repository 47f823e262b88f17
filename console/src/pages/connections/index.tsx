import { useCallback, useState } from 'preact/hooks';
import { deleteConnection, listConnectionPacks, listConnections, listProviders, uninstallConnectionPack } from '../../api/connections';
import { can, Identity } from '../../session';
import { Badge, ConfirmButton, DataTable, ErrorBanner, Notice, Section, useAction, useLive, usePagedList, when } from '../../ui';
import { Connect, Rotate } from './connect';

/** The tenant's connections, the providers it can connect to, and its installed connection packs. */
export function ConnectionsPage({ identity }: { identity: Identity }) {
  const manage = can(identity, 'connections:manage');
  const [refresh, setRefresh] = useState(0);
  const [connecting, setConnecting] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const connections = usePagedList(listConnections, [refresh], (c) => c.id);
  const providers = usePagedList(listProviders, [refresh], (p) => p.providerId);
  const packs = usePagedList(listConnectionPacks, [refresh], (p) => p.name);
  // Connections and connection packs created, bound, rotated or removed elsewhere: events of the host stream.
  const bump = useCallback(() => setRefresh((r) => r + 1), []);
  useLive(bump, { prefixes: ['connection'], stream: can(identity, 'runs:read') });
  const action = useAction();
  const changed = (message: string) => {
    setNotice(message);
    setRefresh((r) => r + 1);
  };
  return (
    <>
      <Notice text={notice} />
      <ErrorBanner error={action.error} />
      {connecting ? (
        <Connect
          providerId={connecting}
          onCancel={() => setConnecting(null)}
          onDone={() => {
            setConnecting(null);
            changed('Connection created. Its credential is stored encrypted and is never shown.');
          }}
        />
      ) : null}
      <Section title="Connections">
        <DataTable
          list={connections}
          caption="Connections"
          noun={['connection', 'connections']}
          empty="No connection yet."
          rowKey={(c) => c.id}
          columns={[
            { header: 'Name', cell: (c) => c.name },
            { header: 'Provider', cell: (c) => c.provider },
            { header: 'Credential', cell: (c) => <Badge value={c.credentialBound ? 'bound' : 'unbound'} /> },
            { header: 'Origin', cell: (c) => c.origin },
            { header: 'Updated', cell: (c) => when(c.updatedAt) },
            manage && {
              header: 'Actions',
              class: 'actions',
              cell: (c) => (
                <>
                  <Rotate connection={c} onDone={() => changed(`Credential of ${c.name} rotated.`)} />
                  <ConfirmButton
                    label="Delete"
                    confirmLabel={`Delete ${c.name}`}
                    question={`Delete connection ${c.name}?`}
                    danger
                    onConfirm={() => void action.run('delete', () => deleteConnection(c.id)).then((r) => r && changed(`Connection ${c.name} deleted.`))}
                  />
                </>
              ),
            },
          ]}
        />
      </Section>
      <Section title="Providers">
        <DataTable
          list={providers}
          caption="Connection providers"
          noun={['provider', 'providers']}
          rowKey={(p) => p.providerId}
          columns={[
            { header: 'Provider', cell: (p) => p.providerId },
            { header: 'Resolved', cell: (p) => (p.resolved ? 'yes' : <span title={p.code}>no ({p.code})</span>) },
            { header: 'Source', cell: (p) => `${p.source ?? '—'}${p.packName ? ` (${p.packName})` : ''}` },
            { header: 'Version', cell: (p) => p.version ?? '—' },
            manage && {
              header: 'Actions',
              cell: (p) =>
                p.resolved ? (
                  <button type="button" onClick={() => setConnecting(p.providerId)} aria-label={`Connect to ${p.providerId}`}>
                    Connect…
                  </button>
                ) : null,
            },
          ]}
        />
      </Section>
      <Section title="Installed connection packs">
        <DataTable
          list={packs}
          caption="Installed connection packs"
          noun={['pack', 'packs']}
          empty="No pack installed."
          rowKey={(p) => p.name}
          columns={[
            {
              header: 'Pack',
              cell: (p) => (
                <>
                  {p.displayName} <code>{p.name}</code>
                </>
              ),
            },
            { header: 'Version', cell: (p) => p.version },
            { header: 'Provider', cell: (p) => p.providerId },
            { header: 'Category', cell: (p) => p.category },
            { header: 'Installed', cell: (p) => `${when(p.installedAt)} by ${p.installedBy}` },
            manage && {
              header: 'Actions',
              cell: (p) => (
                <ConfirmButton
                  label="Uninstall"
                  confirmLabel={`Uninstall ${p.name}`}
                  question={`Uninstall ${p.name}?`}
                  danger
                  onConfirm={() => void action.run('uninstall', () => uninstallConnectionPack(p.name)).then((r) => r && changed(`Pack ${p.name} uninstalled.`))}
                />
              ),
            },
          ]}
        />
      </Section>
    </>
  );
}

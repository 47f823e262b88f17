import { useEffect, useRef, useState } from 'preact/hooks';
import { api, call } from '../api/client';
import { can, Identity } from '../session';
import { Badge, ConfirmButton, ErrorBanner, Loading, Section, useAction, useLoad, when } from '../ui';

type Connection = Awaited<ReturnType<typeof listConnections>>[number];

async function listConnections() {
  return (await call(api.GET('/v1/connections'))).connections;
}

/**
 * Connect to a provider: the consent plan (what the credential will be asked to grant, read first,
 * write as a separate later step) is shown first; the credential form appears only after the operator
 * has seen it. The credential is write-only: it is sent once and never shown again.
 */
function Connect({ providerId, onDone, onCancel }: { providerId: string; onDone: () => void; onCancel: () => void }) {
  const [write, setWrite] = useState(false);
  const plan = useLoad(
    () => call(api.GET('/v1/connection-providers/{providerId}/consent-plan', { params: { path: { providerId }, query: { requested: write ? ['read', 'write'] : ['read'] } } })),
    [providerId, write],
  );
  const [reviewed, setReviewed] = useState(false);
  const [name, setName] = useState(providerId);
  const [secret, setSecret] = useState('');
  const action = useAction();
  const headingRef = useRef<HTMLHeadingElement>(null);
  useEffect(() => headingRef.current?.focus(), [providerId]);
  return (
    <section class="card" aria-labelledby="connect-heading">
      <div class="card-head">
        <h2 id="connect-heading" tabIndex={-1} ref={headingRef}>
          Connect to {providerId}
        </h2>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
      <h3>Consent plan</h3>
      <label class="row">
        <span>
          <input type="checkbox" checked={write} onChange={(e) => setWrite((e.target as HTMLInputElement).checked)} /> Also plan write access
        </span>
      </label>
      <ErrorBanner error={plan.error} />
      {plan.loading && !plan.data ? <Loading what="the consent plan" /> : null}
      {plan.data ? (
        <ol class="consent-plan" aria-label="Consent steps">
          {plan.data.steps.map((step, k) => (
            <li key={k}>
              <strong>
                Step {k + 1}: {step.includesWrite ? 'write access (a separate re-consent)' : 'read access'}
              </strong>
              {step.groups.length ? (
                <ul>
                  {step.groups.map((g) => (
                    <li key={g.key}>
                      {g.label} <Badge value={g.access} /> <code>{g.scopes.join(' ')}</code>
                    </li>
                  ))}
                </ul>
              ) : (
                <p class="muted">No provider scopes requested in this step.</p>
              )}
            </li>
          ))}
        </ol>
      ) : null}
      {plan.data && !reviewed ? (
        <button type="button" class="primary" onClick={() => setReviewed(true)}>
          I have reviewed the plan: set a credential
        </button>
      ) : null}
      {reviewed ? (
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            void action
              .run('create', () => call(api.POST('/v1/connections', { body: { name, provider: providerId, credential: secret } })))
              .then((c) => {
                setSecret('');
                if (c) onDone();
              });
          }}
        >
          <label for="connection-name">Connection name</label>
          <input id="connection-name" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} required />
          <label for="connection-credential">Credential (write-only: never shown again)</label>
          <input id="connection-credential" type="password" autoComplete="off" value={secret} onInput={(e) => setSecret((e.target as HTMLInputElement).value)} required />
          <div class="actions">
            <button type="submit" class="primary" disabled={Boolean(action.busy)}>
              Create connection
            </button>
          </div>
          <ErrorBanner error={action.error} />
        </form>
      ) : null}
    </section>
  );
}

function Rotate({ connection, onDone }: { connection: Connection; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [secret, setSecret] = useState('');
  const action = useAction();
  const id = `rotate-${connection.id}`;
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)} aria-label={`Rotate credential of ${connection.name}`}>
        Rotate
      </button>
    );
  }
  return (
    <form
      class="row"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run('rotate', () => call(api.PUT('/v1/connections/{id}/credential', { params: { path: { id: connection.id } }, body: { credential: secret } }))).then((r) => {
          setSecret('');
          if (r) (setOpen(false), onDone());
        });
      }}
    >
      <label for={id}>New credential for {connection.name}</label>
      <input id={id} type="password" autoComplete="off" value={secret} onInput={(e) => setSecret((e.target as HTMLInputElement).value)} required />
      <button type="submit" class="primary" disabled={Boolean(action.busy)}>
        Save
      </button>
      <button type="button" onClick={() => (setSecret(''), setOpen(false))}>
        Cancel
      </button>
      <ErrorBanner error={action.error} />
    </form>
  );
}

export function ConnectionsPage({ identity }: { identity: Identity }) {
  const manage = can(identity, 'connections:manage');
  const [refresh, setRefresh] = useState(0);
  const [connecting, setConnecting] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const connections = useLoad(listConnections, [refresh]);
  const providers = useLoad(async () => (await call(api.GET('/v1/connection-providers'))).providers, [refresh]);
  const packs = useLoad(async () => (await call(api.GET('/v1/connection-packs'))).packs, [refresh]);
  const action = useAction();
  const changed = (message: string) => {
    setNotice(message);
    setRefresh((r) => r + 1);
  };
  return (
    <>
      {notice ? (
        <p class="notice" role="status">
          {notice}
        </p>
      ) : null}
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
        <ErrorBanner error={connections.error} />
        {connections.loading && !connections.data ? <Loading what="connections" /> : null}
        {connections.data && connections.data.length === 0 ? <p class="muted">No connection yet.</p> : null}
        {connections.data && connections.data.length ? (
          <table class="list">
            <caption class="sr-only">Connections</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Provider</th>
                <th scope="col">Credential</th>
                <th scope="col">Origin</th>
                <th scope="col">Updated</th>
                {manage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {connections.data.map((c) => (
                <tr key={c.id}>
                  <td>{c.name}</td>
                  <td>{c.provider}</td>
                  <td>
                    <Badge value={c.credentialBound ? 'bound' : 'unbound'} />
                  </td>
                  <td>{c.origin}</td>
                  <td>{when(c.updatedAt)}</td>
                  {manage ? (
                    <td class="actions">
                      <Rotate connection={c} onDone={() => changed(`Credential of ${c.name} rotated.`)} />
                      <ConfirmButton
                        label="Delete"
                        confirmLabel={`Delete ${c.name}`}
                        question={`Delete connection ${c.name}?`}
                        danger
                        onConfirm={() => void action.run('delete', () => call(api.DELETE('/v1/connections/{id}', { params: { path: { id: c.id } } }))).then(() => changed(`Connection ${c.name} deleted.`))}
                      />
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Section>
      <Section title="Providers">
        <ErrorBanner error={providers.error} />
        {providers.loading && !providers.data ? <Loading what="providers" /> : null}
        {providers.data ? (
          <table class="list">
            <caption class="sr-only">Connection providers</caption>
            <thead>
              <tr>
                <th scope="col">Provider</th>
                <th scope="col">Resolved</th>
                <th scope="col">Source</th>
                <th scope="col">Version</th>
                {manage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {providers.data.map((p) => (
                <tr key={p.providerId}>
                  <td>{p.providerId}</td>
                  <td>{p.resolved ? 'yes' : <span title={p.code}>no ({p.code})</span>}</td>
                  <td>
                    {p.source ?? '—'}
                    {p.packName ? ` (${p.packName})` : ''}
                  </td>
                  <td>{p.version ?? '—'}</td>
                  {manage ? (
                    <td>
                      {p.resolved ? (
                        <button type="button" onClick={() => setConnecting(p.providerId)} aria-label={`Connect to ${p.providerId}`}>
                          Connect…
                        </button>
                      ) : null}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Section>
      <Section title="Installed connection packs">
        <ErrorBanner error={packs.error} />
        {packs.data && packs.data.length === 0 ? <p class="muted">No pack installed.</p> : null}
        {packs.data && packs.data.length ? (
          <table class="list">
            <caption class="sr-only">Installed connection packs</caption>
            <thead>
              <tr>
                <th scope="col">Pack</th>
                <th scope="col">Version</th>
                <th scope="col">Provider</th>
                <th scope="col">Category</th>
                <th scope="col">Installed</th>
                {manage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {packs.data.map((p) => (
                <tr key={p.name}>
                  <td>
                    {p.displayName} <code>{p.name}</code>
                  </td>
                  <td>{p.version}</td>
                  <td>{p.providerId}</td>
                  <td>{p.category}</td>
                  <td>
                    {when(p.installedAt)} by {p.installedBy}
                  </td>
                  {manage ? (
                    <td>
                      <ConfirmButton
                        label="Uninstall"
                        confirmLabel={`Uninstall ${p.name}`}
                        question={`Uninstall ${p.name}?`}
                        danger
                        onConfirm={() => void action.run('uninstall', () => call(api.DELETE('/v1/connection-packs/{name}', { params: { path: { name: p.name } } }))).then(() => changed(`Pack ${p.name} uninstalled.`))}
                      />
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
      </Section>
    </>
  );
}

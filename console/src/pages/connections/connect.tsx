import { useEffect, useRef, useState } from 'preact/hooks';
import { Connection, consentPlan, createConnection, rotateCredential } from '../../api/connections';
import { Badge, ErrorBanner, Loading, useAction, useLoad } from '../../ui';

/**
 * Connect to a provider: the consent plan (what the credential will be asked to grant, read first,
 * write as a separate later step) is shown first; the credential form appears only after the operator
 * has seen it. The credential is write-only: it is sent once and never shown again.
 */
export function Connect({ providerId, onDone, onCancel }: { providerId: string; onDone: () => void; onCancel: () => void }) {
  const [write, setWrite] = useState(false);
  const plan = useLoad(() => consentPlan(providerId, write), [providerId, write]);
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
              .run('create', () => createConnection({ name, provider: providerId, credential: secret }))
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

/** Rotates a connection's credential (write-only: typed once, never shown). */
export function Rotate({ connection, onDone }: { connection: Connection; onDone: () => void }) {
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
        void action.run('rotate', () => rotateCredential(connection.id, secret)).then((r) => {
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

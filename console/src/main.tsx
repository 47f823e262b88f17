import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, call, CREDENTIAL_REFUSED } from './api/client';
import { ConnectionsPage } from './pages/connections';
import { GoalsPage } from './pages/goals';
import { PortabilityPage } from './pages/portability';
import { ProposalsPage } from './pages/proposals';
import { RunsPage } from './pages/runs';
import { ToolsPage } from './pages/tools';
import { can, clearCredential, credential, Identity, storeCredential } from './session';
import { ErrorBanner } from './ui';
import './styles.css';

interface PageDef {
  id: string;
  title: string;
  visible: (i: Identity) => boolean;
  render: (i: Identity) => preact.JSX.Element;
}

const PAGES: PageDef[] = [
  { id: 'tools', title: 'Tools', visible: (i) => can(i, 'tools:read'), render: () => <ToolsPage /> },
  { id: 'proposals', title: 'Proposals', visible: (i) => can(i, 'proposals:read') || can(i, 'approvals:respond'), render: (i) => <ProposalsPage identity={i} /> },
  { id: 'goals', title: 'Goals', visible: (i) => can(i, 'goals:read'), render: (i) => <GoalsPage identity={i} /> },
  { id: 'connections', title: 'Connections', visible: (i) => can(i, 'connections:read'), render: (i) => <ConnectionsPage identity={i} /> },
  { id: 'runs', title: 'Runs', visible: (i) => can(i, 'runs:read'), render: (i) => <RunsPage identity={i} /> },
  { id: 'portability', title: 'Portability', visible: (i) => can(i, 'portability:export') || can(i, 'portability:import'), render: (i) => <PortabilityPage identity={i} /> },
];

function useHashRoute(): string {
  const read = () => window.location.hash.replace(/^#\/?/, '').split('/')[0] ?? '';
  const [route, setRoute] = useState(read());
  useEffect(() => {
    const on = () => setRoute(read());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

async function whoami(): Promise<Identity> {
  const me = await call(api.GET('/v1/whoami'));
  return { ...me, scopes: new Set(me.scopes) };
}

function SignIn({ onSignedIn, jwt, notice }: { onSignedIn: (i: Identity) => void; jwt: boolean; notice: ApiError | null }) {
  const [kind, setKind] = useState<'api-key' | 'jwt'>('api-key');
  const [token, setToken] = useState('');
  const [error, setError] = useState<ApiError | null>(notice);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const value = token.trim();
    if (!value) {
      setError(new ApiError(0, 'validation_error', kind === 'api-key' ? 'Enter an API key.' : 'Enter a bearer token.'));
      return;
    }
    setBusy(true);
    setError(null);
    storeCredential(value);
    try {
      const identity = await whoami();
      setToken('');
      onSignedIn(identity);
    } catch (err) {
      clearCredential();
      setError(err instanceof ApiError ? err : new ApiError(0, 'console_error', String(err)));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>OpenWOP console</h1>
      <form onSubmit={submit} class="card" aria-describedby="signin-help">
        <h2>Sign in</h2>
        <p id="signin-help" class="muted">
          The credential stays in this browser tab only (session storage) and is sent to this host in the Authorization header.
        </p>
        {jwt ? (
          <fieldset>
            <legend>Credential type</legend>
            <label>
              <input type="radio" name="kind" value="api-key" checked={kind === 'api-key'} onChange={() => setKind('api-key')} /> API key
            </label>
            <label>
              <input type="radio" name="kind" value="jwt" checked={kind === 'jwt'} onChange={() => setKind('jwt')} /> Bearer token (JWT)
            </label>
          </fieldset>
        ) : null}
        <label for="credential">{kind === 'api-key' ? 'API key' : 'Bearer token'}</label>
        <input
          id="credential"
          name="credential"
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
          placeholder={kind === 'api-key' ? 'owk_…' : 'eyJ…'}
        />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <ErrorBanner error={error} />
      </form>
    </main>
  );
}

function Shell({ identity, onSignOut }: { identity: Identity; onSignOut: () => void }) {
  const route = useHashRoute();
  const pages = PAGES.filter((p) => p.visible(identity));
  const page = pages.find((p) => p.id === route) ?? pages[0];
  const mainRef = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    document.title = page ? `${page.title} · OpenWOP console` : 'OpenWOP console';
    // Moving between pages puts keyboard focus at the start of the new page.
    if (!first.current) mainRef.current?.focus();
    first.current = false;
  }, [page?.id]);
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), mainRef.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">OpenWOP console</span>
        <nav aria-label="Pages">
          <ul>
            {pages.map((p) => (
              <li key={p.id}>
                <a href={`#/${p.id}`} aria-current={p === page ? 'page' : undefined}>
                  {p.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span title="Tenant, workspace and principal of the signed-in credential">
            <span class="sr-only">Signed in as </span>
            {identity.principal} · {identity.tenant}
            {identity.workspace ? ` / ${identity.workspace}` : ''}
          </span>
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={mainRef} tabIndex={-1}>
        {page ? (
          <>
            <h1>{page.title}</h1>
            {page.render(identity)}
          </>
        ) : (
          <>
            <h1>Nothing to show</h1>
            <p>This credential holds none of the scopes the console's pages need.</p>
          </>
        )}
      </main>
    </>
  );
}

function App() {
  const [identity, setIdentity] = useState<Identity | null>(null);
  const [checking, setChecking] = useState(Boolean(credential()));
  const [jwt, setJwt] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  useEffect(() => {
    fetch('/console/settings.json')
      .then((r) => (r.ok ? r.json() : { jwt: false }))
      .then((s: { jwt?: boolean }) => setJwt(Boolean(s.jwt)))
      .catch(() => setJwt(false));
    if (!credential()) return;
    whoami().then(
      (i) => (setIdentity(i), setChecking(false)),
      (e: unknown) => {
        // A key revoked or expired since the last page load: back to the sign-in form, saying why.
        clearCredential();
        setError(e instanceof ApiError ? e : null);
        setChecking(false);
      },
    );
  }, []);

  // A credential revoked or expired while signed in: back to the sign-in form, saying why.
  useEffect(() => {
    const refused = (e: Event) => {
      clearCredential();
      setError((e as CustomEvent<ApiError>).detail);
      setIdentity(null);
    };
    window.addEventListener(CREDENTIAL_REFUSED, refused);
    return () => window.removeEventListener(CREDENTIAL_REFUSED, refused);
  }, []);

  if (checking) return <p role="status">Checking the credential…</p>;
  if (!identity) {
    return (
      <SignIn onSignedIn={(i) => (setError(null), setIdentity(i))} jwt={jwt} notice={error} />
    );
  }
  return (
    <Shell
      identity={identity}
      onSignOut={() => {
        clearCredential();
        setIdentity(null);
        window.location.hash = '';
      }}
    />
  );
}

render(<App />, document.getElementById('app')!);

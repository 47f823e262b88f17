import { useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { whoami } from '../api/identity';
import { clearCredential, Identity, storeCredential } from '../session';
import { asApiError, ErrorBanner } from '../ui';

/** The sign-in form: an API key, or (where the host accepts JWTs) a bearer token. */
export function SignIn({ onSignedIn, jwt, sso = false, notice }: { onSignedIn: (i: Identity) => void; jwt: boolean; sso?: boolean; notice: ApiError | null }) {
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
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>OpenWOP console</h1>
      {sso ? (
        <p class="card">
          <a class="button primary" href="/console/auth/login">
            Sign in with single sign-on
          </a>
        </p>
      ) : null}
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

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, CREDENTIAL_REFUSED } from './api/client';
import { whoami } from './api/identity';
import { Shell } from './app/shell';
import { SignIn } from './app/sign-in';
import { clearCredential, credential, Identity } from './session';
import './styles.css';

function App() {
  const [identity, setIdentity] = useState<Identity | null>(null);
  const [checking, setChecking] = useState(true);
  const [jwt, setJwt] = useState(false);
  const [sso, setSso] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);

  useEffect(() => {
    fetch('/console/settings.json')
      .then((r) => (r.ok ? r.json() : { jwt: false }))
      .then((s: { jwt?: boolean; sso?: boolean }) => (setJwt(Boolean(s.jwt)), setSso(Boolean(s.sso))))
      .catch(() => setJwt(false));
    // Without a pasted credential, a single sign-on session (its HttpOnly cookie) may be signed in already.
    if (!credential()) {
      whoami().then(
        (i) => (setIdentity(i), setChecking(false)),
        () => setChecking(false),
      );
      return;
    }
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
  if (!identity) return <SignIn onSignedIn={(i) => (setError(null), setIdentity(i))} jwt={jwt} sso={sso} notice={error} />;
  return (
    <Shell
      identity={identity}
      onSignOut={() => {
        // A single sign-on session ends server-side too (the cookie is HttpOnly: only the host can drop it).
        if (!credential()) void fetch('/console/auth/logout', { method: 'POST' }).catch(() => undefined);
        clearCredential();
        setIdentity(null);
        window.location.hash = '';
      }}
    />
  );
}

render(<App />, document.getElementById('app')!);

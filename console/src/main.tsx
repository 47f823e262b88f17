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
  if (!identity) return <SignIn onSignedIn={(i) => (setError(null), setIdentity(i))} jwt={jwt} notice={error} />;
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

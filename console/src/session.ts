/**
 * The signed-in credential lives only in sessionStorage (gone when the tab closes), is sent only in the
 * Authorization header, and never appears in a URL, the page title or a log line.
 */
const STORAGE_KEY = 'openwop.console.credential';

export function credential(): string | null {
  try {
    return window.sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

export function storeCredential(token: string): void {
  window.sessionStorage.setItem(STORAGE_KEY, token);
}

/** Signing out forgets the credential and everything the console kept for this tab. */
export function clearCredential(): void {
  for (const key of Object.keys(window.sessionStorage)) {
    if (key.startsWith('openwop.console.')) window.sessionStorage.removeItem(key);
  }
}

export interface Identity {
  tenant: string;
  workspace?: string;
  principal: string;
  kind: 'api-key' | 'jwt';
  scopes: ReadonlySet<string>;
}

export function can(identity: Identity, ...scopes: string[]): boolean {
  return scopes.every((s) => identity.scopes.has(s));
}

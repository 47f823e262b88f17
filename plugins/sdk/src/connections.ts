import { defineExtensionPoint } from './extension-point';

/** One read or write consent group of a provider (RFC 0095 `$defs.ScopeGroup`). */
export interface ConnectionScopeGroup {
  key: string;
  label: string;
  /** The provider's raw scope strings. */
  scopes: string[];
}

/**
 * The portable provider definition of a connection pack (`provider` in
 * connection-pack-manifest.schema.json). It never carries a secret: OAuth client credentials and
 * account credentials are host concerns, held in the credential store.
 */
export interface ConnectionProviderDefinition {
  id: string;
  displayName: string;
  category: string;
  vendor?: string;
  auth: {
    kind: 'oauth2' | 'api_key' | 'bearer' | 'basic';
    authFlow?: 'pkce' | 'client_credentials' | 'manual' | 'none';
    scopeModel?: 'groups' | 'coarse' | 'capabilities';
    endpoints?: { authorize?: string; token?: string; revoke?: string };
    scopes?: { read?: ConnectionScopeGroup[]; write?: ConnectionScopeGroup[] };
    instanceUrlTemplate?: string;
  };
  reach: { mcp: { server: { url: string; transport: 'http' | 'sse' } } } | { openapi: { ref: string } } | { integration: { node: string } };
  consumerNodes?: string[];
  docsUrl?: string;
  /** RFC 0120: the hosts a credential of this provider may be sent to (dot-anchored suffix match). */
  apiHosts?: string[];
}

/** A connection pack manifest (`kind: "connection"`). */
export interface ConnectionPackManifest {
  name: string;
  version: string;
  kind: 'connection';
  engines: { openwop: string };
  description?: string;
  author?: string;
  license?: string;
  homepage?: string;
  repository?: string;
  keywords?: string[];
  provider: ConnectionProviderDefinition;
}

/**
 * A provider the host (or a plugin) ships. An installed pack for the same `provider.id` outranks it
 * only when the pack's version is >= `version` under SemVer §11. Without a version the built-in is a
 * pure fallback: any installed pack outranks it.
 */
export interface BuiltinConnectionProvider {
  provider: ConnectionProviderDefinition;
  version?: string;
}

/**
 * Connection provider extension point: a provider class decorated `@ConnectionProviderSource()`
 * contributes built-in providers. The host validates each against the manifest schema and the
 * credential-material scan at start; an invalid one is left out and reported in health.
 */
export interface ConnectionProviderSourceContract {
  providers(): BuiltinConnectionProvider[] | Promise<BuiltinConnectionProvider[]>;
}

export const ConnectionProviderSource = defineExtensionPoint<{ id: string }>('connection-provider-source');

/** What a sealed credential is bound to: a ciphertext only opens for the same tenant and credential. */
export interface CredentialSealingContext {
  tenant: string;
  credentialId: string;
}

/** A credential as stored: the id of the key (or KMS key) that sealed it, and opaque bytes. */
export interface SealedCredential {
  keyId: string;
  sealed: Uint8Array;
}

/**
 * Credential key provider extension point (for example a KMS). The host seals every credential
 * through the provider selected by OPENWOP_CONFIG `connections.keyProvider` (default `config`, the
 * built-in AES-256-GCM keyring from OPENWOP_CREDENTIAL_KEYS). Implementations must bind the
 * ciphertext to the context (as additional authenticated data) and must never log plaintext.
 */
export interface CredentialKeyProviderContract {
  /** False when nothing can be sealed now (no key); the host then refuses to store credentials. */
  isAvailable(): boolean;
  seal(plaintext: Uint8Array, context: CredentialSealingContext): Promise<SealedCredential>;
  open(credential: SealedCredential, context: CredentialSealingContext): Promise<Uint8Array>;
  /** The id of the key new credentials are sealed with (credentials under other ids are re-sealed). */
  currentKeyId(): string | undefined;
}

export const CredentialKeyProvider = defineExtensionPoint<{ id: string }>('credential-key-provider');

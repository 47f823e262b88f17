import { defineExtensionPoint } from './extension-point';

export interface ArtifactViolation {
  path: string;
  message: string;
}

/** Who an artifact is installed for. */
export interface InstallScope {
  tenant: string;
  workspace?: string;
  principal: string;
  /**
   * The installing principal's authority (since 1.2): its scopes and, when it is an API key, the key's
   * id. An installer whose artifact later acts on the installer's behalf (an automation starting
   * runs) records it; the host then grants that work only what the key still holds. Since 1.3 the
   * scopes are exactly those the artifact's `requiredScopes` named (the installer held them all);
   * a bundle import carries the importer's. Absent when the host installs on nobody's behalf (the CLI).
   */
  delegation?: { scopes: readonly string[]; keyId?: string | null };
}

export interface InstalledArtifact {
  id: string;
  kind: string;
  name: string;
  version?: string;
  /** `sha256:<hex>` of the stored bytes (the artifact's JSON text as submitted). */
  ref: string;
  content: Record<string, unknown>;
  origin: string;
  workspace?: string;
  installedBy: string;
  createdAt: string;
  updatedAt: string;
}

/**
 * Artifact installer extension point: one provider per artifact kind (node-pack,
 * workflow-chain-pack, prompt-template, automation, ...). The host stores the artifact's JSON text
 * exactly as submitted in its pack registry; the installer validates them and reacts to install/uninstall.
 * Used by proposals (apply) and portability (import), and by anyone installing packs.
 */
export interface ArtifactInstallerProvider {
  /** Violations that make the artifact malformed for this kind (empty when installable). */
  validate(content: Record<string, unknown>): ArtifactViolation[] | Promise<ArtifactViolation[]>;
  /** The registry name (unique per tenant and kind) and version of an artifact. */
  identify(content: Record<string, unknown>): { name: string; version?: string };
  /**
   * Optional read-only checks of `content` against the destination that would make its install
   * fail there (for example a provider id another installed artifact holds). Bundle import plans
   * call it so a dry run shows the conflict and an apply refuses before writing. Never writes.
   */
  preflight?(content: Record<string, unknown>, scope: InstallScope, tx?: unknown): Promise<ArtifactViolation[]>;
  /**
   * Optional (since 1.3): the scopes an installed artifact will act with later on its installer's
   * behalf (an automation that starts runs: `runs:create` and what its chain needs). Asked before
   * the install transaction; an installer lacking one of them is refused (403 `forbidden`) and the
   * install's `delegation` records exactly these. Default: none (the artifact never acts).
   */
  requiredScopes?(content: Record<string, unknown>, scope: InstallScope): Promise<string[]>;
  /** Called inside the install transaction after the bytes are stored. */
  afterInstall?(artifact: InstalledArtifact, scope: InstallScope, tx: unknown): Promise<void>;
  /**
   * Optional batch form of `afterInstall`, called once for the artifacts a batch install created or
   * changed (the registry's `installMany`, used by bundle imports). When absent, `afterInstall` is
   * called per artifact.
   */
  afterInstallMany?(artifacts: InstalledArtifact[], scope: InstallScope, tx: unknown): Promise<void>;
  afterUninstall?(artifact: InstalledArtifact, scope: InstallScope, tx: unknown): Promise<void>;
}

export const ArtifactInstaller = defineExtensionPoint<{ kind: string }>('artifact-installer');

import { defineExtensionPoint } from './extension-point';

/**
 * Audit checkpoint signer extension point (for example a KMS or an HSM holding the audit log's
 * Ed25519 key). The host signs every audit checkpoint through the signer named by
 * OPENWOP_AUDIT_SIGNER instead of a local key, advertises its public key in discovery
 * (`auth.auditLogIntegrity.checkpointPublicKey`) and verifies checkpoints against it; the private
 * key never reaches the host, so someone holding the host's database cannot re-sign a rewritten log.
 *
 * `sign` is called inside the transaction of the audited action (with the tenant's chain locked):
 * keep it fast, and reject rather than hang (the host then seals the checkpoint later).
 */
export interface AuditCheckpointSignerContract {
  /** The Ed25519 public key, base64 SubjectPublicKeyInfo DER. Read once at first use and kept. */
  publicKeySpki(): string | Promise<string>;
  /** The 64-byte Ed25519 signature of `message` (the 32 bytes of a checkpoint's Merkle root). */
  sign(message: Uint8Array): Promise<Uint8Array>;
}

export const AuditCheckpointSigner = defineExtensionPoint<{ id: string }>('audit-checkpoint-signer');

import { createHash } from 'node:crypto';

/**
 * RFC 0063 (`outputAttestation` on `core.subWorkflow`, node-packs.md §"verify-before-merge"): the
 * content checksum of a child's harvested outputs and the merge decision of its approval gate. One
 * implementation for the node (core-subworkflow.executor.ts) and the sample seam
 * (`POST /v1/host/sample/subrun/attest`).
 */

export interface OutputAttestation {
  checksum?: boolean;
  algorithm?: 'sha256';
  requireApproval?: boolean;
}

/** RFC 8785 (JCS) canonical JSON: object keys sorted by UTF-16 code units, no whitespace, ECMAScript number and string forms. */
export function canonicalize(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    // JSON.stringify is the ECMAScript serialization JCS prescribes for strings, numbers and literals.
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalize(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalize(v)}`).join(',')}}`;
}

/** The attestation of a harvested output object: lowercase hex SHA-256 of its JCS form (content-free: a hash only). */
export function attestationOf(outputs: Record<string, unknown>): { checksum: string; algorithm: 'sha256' } {
  return { checksum: createHash('sha256').update(canonicalize(outputs), 'utf8').digest('hex'), algorithm: 'sha256' };
}

/** Whether the child's outputs are merged: always without an approval gate; with one, only on `accept` or `edit-accept` (fail closed). */
export function mergesAfter(attestation: OutputAttestation | undefined, approvalAction: string | undefined): boolean {
  if (!attestation?.requireApproval) return true;
  return approvalAction === 'accept' || approvalAction === 'edit-accept';
}

/** The config's `outputAttestation`, when it is well formed (else undefined, reported by `attestationProblems`). */
export function attestationConfig(v: unknown): OutputAttestation | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const a = v as Record<string, unknown>;
  return { checksum: a.checksum === true, ...(a.algorithm === 'sha256' ? { algorithm: 'sha256' as const } : {}), requireApproval: a.requireApproval === true };
}

export function attestationProblems(v: unknown): string[] {
  if (v === undefined) return [];
  if (!v || typeof v !== 'object' || Array.isArray(v)) return ['core.subWorkflow config.outputAttestation must be an object'];
  const a = v as Record<string, unknown>;
  const out: string[] = [];
  for (const k of ['checksum', 'requireApproval'] as const) if (a[k] !== undefined && typeof a[k] !== 'boolean') out.push(`core.subWorkflow config.outputAttestation.${k} must be a boolean`);
  if (a.algorithm !== undefined && a.algorithm !== 'sha256') out.push('core.subWorkflow config.outputAttestation.algorithm must be "sha256"');
  return out;
}

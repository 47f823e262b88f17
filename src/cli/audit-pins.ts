import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The verifier's memory of `openwop-host audit verify --since`: per host and tenant, the last
 * checkpoint it verified (its id, sequence, Merkle root and signature) and the key that signed it.
 * A later verification fails when the host no longer holds that checkpoint exactly (a truncation
 * below it, a rewrite of it), or advertises another key without being told to trust it.
 */
/** A failure of the audit commands that is the whole answer to the person at the terminal (a pin file, an argument). */
export class AuditCliError extends Error {}

export interface AuditPin {
  checkpoint: string;
  atSequence: number;
  merkleRoot: string;
  signature: string;
  /** The advertised checkpoint key (base64 SPKI) when the pin was taken. */
  publicKey: string;
  verifiedAt: string;
}

export interface AuditPinState {
  version: 1;
  pins: Record<string, AuditPin>;
}

/** `$XDG_STATE_HOME/openwop-host/audit-pins.json` (else `~/.local/state/...`; `%LOCALAPPDATA%\openwop-host\...` on Windows). */
export function defaultPinFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = process.platform === 'win32' ? env.LOCALAPPDATA ?? path.join(os.homedir(), 'AppData', 'Local') : env.XDG_STATE_HOME || path.join(os.homedir(), '.local', 'state');
  return path.join(base, 'openwop-host', 'audit-pins.json');
}

/** The key of a pin: the host's base URL and the tenant of the credential. */
export function pinKey(baseUrl: string, tenant: string): string {
  return `${baseUrl} ${tenant}`;
}

function isPin(v: unknown): v is AuditPin {
  const p = v as Partial<AuditPin> | null;
  return !!p && typeof p.checkpoint === 'string' && Number.isSafeInteger(p.atSequence) && typeof p.merkleRoot === 'string' && typeof p.signature === 'string' && typeof p.publicKey === 'string';
}

/** Reads the state file (none yet: no pins). A file that is not a pin state is refused, never overwritten. */
export function readPins(file: string): AuditPinState {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, pins: {} };
    throw new AuditCliError(`cannot read the pin file ${file}: ${(e as Error).message}`);
  }
  let state: Partial<AuditPinState>;
  try {
    state = JSON.parse(text) as Partial<AuditPinState>;
  } catch {
    throw new AuditCliError(`the pin file ${file} is not JSON: fix or remove it (it holds the checkpoints this verifier trusts)`);
  }
  if (state?.version !== 1 || typeof state.pins !== 'object' || state.pins === null || !Object.values(state.pins).every(isPin)) {
    throw new AuditCliError(`the pin file ${file} is not an audit pin file (version 1): fix or remove it`);
  }
  return state as AuditPinState;
}

/** Writes the state file whole (a temporary file renamed over it), readable by its owner only. */
export function writePins(file: string, state: AuditPinState): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

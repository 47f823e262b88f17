import * as fs from 'node:fs';
import { call, HostClientOptions } from './host-client';

/**
 * `openwop-host connections rotate-credential <id> --credential-file F [--overlap-seconds N]` and
 * `connections retire-previous <id>`: clients of a running host's HTTP API (`PUT /v1/connections/{id}/credential`,
 * `DELETE /v1/connections/{id}/credential/previous`; `connections:manage`, a tenant-level key). The
 * credential is read from a file or stdin ("-"), never from the command line (shell history, `ps`), and
 * never printed: the host answers the connection's reference and the end of the overlap only.
 */

interface ConnectionView {
  id: string;
  name: string;
  provider: string;
  credentialRef: string | null;
  previousCredentialExpiresAt: string | null;
}

function print(o: HostClientOptions, v: ConnectionView, json?: boolean): void {
  if (json) {
    o.out.write(`${JSON.stringify(v, null, 2)}\n`);
    return;
  }
  o.out.write(`${v.id}  ${v.name}  ${v.provider}  ${v.credentialRef ?? '(no credential)'}\n`);
  o.out.write(v.previousCredentialExpiresAt ? `the replaced credential is still offered until ${v.previousCredentialExpiresAt}\n` : 'no replaced credential is offered\n');
}

export async function connectionsRotateCredential(o: HostClientOptions, id: string, opts: { credentialFile: string; overlapSeconds?: string; json?: boolean }): Promise<number> {
  let credential: string;
  try {
    credential = fs.readFileSync(opts.credentialFile === '-' ? 0 : opts.credentialFile, 'utf8').replace(/\r?\n$/, '');
  } catch (e) {
    o.err.write(`cannot read ${opts.credentialFile}: ${(e as Error).message}\n`);
    return 1;
  }
  if (!credential) {
    o.err.write(`${opts.credentialFile} is empty\n`);
    return 1;
  }
  const body: Record<string, unknown> = { credential };
  if (opts.overlapSeconds !== undefined) {
    const n = Number(opts.overlapSeconds);
    if (!/^\d+$/.test(opts.overlapSeconds) || !Number.isSafeInteger(n)) {
      o.err.write('--overlap-seconds must be a whole number of seconds\n');
      return 1;
    }
    body.overlapSeconds = n;
  }
  print(o, (await call(o, 'PUT', `/v1/connections/${encodeURIComponent(id)}/credential`, body)) as unknown as ConnectionView, opts.json);
  return 0;
}

export async function connectionsRetirePrevious(o: HostClientOptions, id: string, opts: { json?: boolean }): Promise<number> {
  print(o, (await call(o, 'DELETE', `/v1/connections/${encodeURIComponent(id)}/credential/previous`)) as unknown as ConnectionView, opts.json);
  return 0;
}

import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { EventLogService, RunEventView } from '../../../platform/events/event-log.service';
import { RunRecordsPort } from '../../../platform/run-ports/run-records';
import type { Principal } from '../../../platform/identity/principal';
import { CredentialStoreService } from '../credentials/credential-store.service';

export interface CredentialEchoSurfaces {
  runId: string;
  credentialRef: string;
  inputs: Record<string, unknown>;
  variables: Record<string, unknown>;
  channels: Array<Record<string, unknown>>;
  events: RunEventView[];
  snapshot: Record<string, unknown>;
  debugBundle: Record<string, unknown>;
}

const ECHO_NODE = 'credential-echo';

/**
 * The `credential-payload-redaction` probe (RFC 0046 §C.1): seeds a credential whose plaintext is
 * the caller's canary, runs a one-node run that resolves it and echoes what it resolved, and returns
 * every observable surface of that run. Resolved material is replaced by the credential's reference
 * before anything is recorded, so only `cred:<id>` crosses the wire. The seeded credential is
 * deleted afterwards.
 */
@Injectable()
export class CredentialEchoService {
  constructor(
    private readonly ds: DataSource,
    private readonly credentials: CredentialStoreService,
    private readonly runs: RunRecordsPort,
    private readonly events: EventLogService,
  ) {}

  async echo(p: Principal, canary: string): Promise<CredentialEchoSurfaces> {
    const scope = { tenant: p.tenant, workspace: p.workspace };
    const seeded = await this.ds.transaction(async (m) => {
      const credentialId = await this.credentials.store(p.tenant, canary, m);
      const credentialRef = `cred:${credentialId}`;
      const run = await this.runs.create(p, 'credential-echo', { credentialRef }, m);
      await this.events.append(scope, run.runId, 'node.started', { nodeId: ECHO_NODE, inputs: { credentialRef } }, { manager: m, nodeId: ECHO_NODE });
      return { credentialId, credentialRef, runId: run.runId };
    });
    const { credentialId, credentialRef, runId } = seeded;
    try {
      // The node resolves the credential and echoes it; its output is redacted before it is recorded.
      const resolved = await this.credentials.open(p.tenant, credentialId);
      const outputs = redactResolved({ echoed: resolved }, resolved, credentialRef);
      await this.ds.transaction(async (m) => {
        await this.events.append(scope, runId, 'node.completed', { nodeId: ECHO_NODE, outputs }, { manager: m, nodeId: ECHO_NODE });
        await this.runs.setStatus(scope, runId, 'completed', m);
      });
      const events = await this.events.read(scope, runId);
      const run = await this.runs.find(scope, runId);
      return {
        runId,
        credentialRef,
        inputs: { credentialRef },
        variables: { [ECHO_NODE]: outputs },
        channels: [],
        events,
        snapshot: { runId, status: run?.status, nodes: { [ECHO_NODE]: { status: 'completed', outputs } } },
        debugBundle: { run, events },
      };
    } finally {
      await this.ds.transaction((m) => this.credentials.delete(p.tenant, credentialId, m));
    }
  }
}

/** `value` with every occurrence of the resolved plaintext replaced by `[REDACTED:<ref>]`. */
export function redactResolved<T>(value: T, plaintext: string, ref: string): T {
  if (!plaintext) return value;
  const marker = `[REDACTED:${ref}]`;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.split(plaintext).join(marker);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [walk(k) as string, walk(x)]));
    return v;
  };
  return walk(value) as T;
}

import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { randomUUID } from 'node:crypto';
import { AuditLogService } from '../../../platform/audit/audit-log.service';
import { InvariantViolation } from '../../../platform/errors/internal-fault';
import type { TenantScope } from '../../../platform/identity/principal';
import { UUID } from '../../../platform/ids';
import { ConnectionEntity } from '../connections/connection.entity';
import { ConnectionsService, credentialRefOf } from '../connections/connections.service';
import { ConnectionPacksService } from '../packs/connection-packs.service';
import { checkEgress } from '../packs/egress-check';

/** RFC 0079 §A: what the host knows about a credential it may attach, never the secret itself. */
export interface CredentialProvenance {
  credentialId: string;
  issuer: string;
  audiences: string[];
  redactionPolicy: 'always';
  auditCorrelationId: string;
}

export type EgressDecisionValue = 'allowed' | 'denied' | 'downgraded';
export type EgressReason = 'ok' | 'out-of-audience' | 'ssrf-blocked' | 'provenance-unevaluable';

/** The `egress.decided` payload (RFC 0079 §B): content-free, the destination is a host name only. */
export interface EgressDecided {
  decision: EgressDecisionValue;
  destination: string;
  reason: EgressReason;
  credentialId?: string;
  auditCorrelationId: string;
}

/** A call's credential as the egress policy holds it: the connection it names and what can be said of it. */
export interface EgressCredential {
  /** The connection's id when one was found in the caller's tenant. */
  connectionId?: string;
  /** Null when the provenance cannot be evaluated (unknown connection, no credential bound, unresolvable provider, no apiHosts). */
  provenance: CredentialProvenance | null;
  auditCorrelationId: string;
}

/**
 * The credential↔destination binding of RFC 0079 §C for connection credentials. A connection's credential is
 * issued by the host (the credential store) for the hosts its provider declares (`apiHosts`, RFC 0120): those are
 * its audiences. A credential is attached to a hop only when the hop's host is within them; outside them the hop
 * is denied (or, when the call allows it, sent without the credential: downgraded); a credential whose provenance
 * cannot be evaluated is never attached (denied, fail closed). Every decision is audited (`egress.decided`) with
 * the content-free fields of the event; the secret leaves the store only for an allowed hop, through
 * `ConnectionsService.withCredential`, which checks the host against the provider's apiHosts once more.
 */
@Injectable()
export class CredentialedEgressService {
  constructor(
    private readonly ds: DataSource,
    private readonly connections: ConnectionsService,
    private readonly packs: ConnectionPacksService,
    private readonly audit: AuditLogService,
  ) {}

  /** The provenance of the credential of connection `ref` (its id or its name) in the caller's tenant. */
  async credential(scope: TenantScope, ref: string): Promise<EgressCredential> {
    const auditCorrelationId = randomUUID();
    const repo = this.ds.getRepository(ConnectionEntity);
    const row = (UUID.test(ref) ? await repo.findOne({ where: { tenant: scope.tenant, id: ref } }) : null) ?? (await repo.findOne({ where: { tenant: scope.tenant, name: ref } }));
    if (!row) return { provenance: null, auditCorrelationId };
    const credentialId = credentialRefOf(row.credentialId);
    const resolved = await this.packs.resolve(scope, row.providerId);
    const audiences = resolved.resolved ? (resolved.provider?.apiHosts ?? []).filter((h) => typeof h === 'string' && h.length > 0) : [];
    if (!credentialId || audiences.length === 0) return { connectionId: row.id, provenance: null, auditCorrelationId };
    return { connectionId: row.id, provenance: { credentialId, issuer: 'host', audiences: [...audiences], redactionPolicy: 'always', auditCorrelationId }, auditCorrelationId };
  }

  /** The decision for one hop to `host` (a pure function of the provenance and the host). */
  decide(c: EgressCredential, host: string, fallback: 'deny' | 'anonymous' = 'deny'): EgressDecided {
    const base = { destination: host, auditCorrelationId: c.auditCorrelationId, ...(c.provenance ? { credentialId: c.provenance.credentialId } : {}) };
    if (!c.provenance) return { ...base, decision: 'denied', reason: 'provenance-unevaluable' };
    if (checkEgress(c.provenance.audiences, host).allowed) return { ...base, decision: 'allowed', reason: 'ok' };
    return { ...base, decision: fallback === 'anonymous' ? 'downgraded' : 'denied', reason: 'out-of-audience' };
  }

  /** The decision when the SSRF guard refused the hop before any credential was considered. */
  guardRefused(c: EgressCredential, host: string | undefined): EgressDecided {
    return { destination: host || 'unknown', auditCorrelationId: c.auditCorrelationId, ...(c.provenance ? { credentialId: c.provenance.credentialId } : {}), decision: 'denied', reason: 'ssrf-blocked' };
  }

  /** Hands the credential to `use` for an allowed hop only (the store re-checks the host against the apiHosts). */
  async withCredential<T>(scope: TenantScope, c: EgressCredential, d: EgressDecided, use: (secret: string) => Promise<T>): Promise<T> {
    if (d.decision !== 'allowed' || !c.connectionId) throw new InvariantViolation('a credential is opened for an allowed egress only');
    return this.connections.withCredential(scope, c.connectionId, d.destination, use);
  }

  /**
   * After the provider refused the credential of an allowed hop: `use` with the credential a two-key-overlap
   * rotation replaced, while its overlap lasts (RFC 0046 §D); undefined when there is none.
   */
  async withReplacedCredential<T>(scope: TenantScope, c: EgressCredential, d: EgressDecided, use: (secret: string) => Promise<T>): Promise<T | undefined> {
    if (d.decision !== 'allowed' || !c.connectionId) throw new InvariantViolation('a credential is opened for an allowed egress only');
    return this.connections.withReplacedCredential(scope, c.connectionId, d.destination, use);
  }

  /** Writes the decision to the audit log (`egress.decided`, content-free: the connection's id, never a credential reference). */
  async record(scope: TenantScope & { principal?: string; kind?: string }, c: EgressCredential, d: EgressDecided, runId?: string): Promise<void> {
    await this.ds.transaction((m) =>
      this.audit.record(m, {
        tenant: scope.tenant,
        ...(scope.workspace ? { workspace: scope.workspace } : {}),
        actor: { principal: scope.principal ?? 'core.system', kind: scope.kind ?? 'system' },
        action: 'egress.decided',
        resource: runId ? { type: 'run', id: runId } : { type: 'egress', id: d.auditCorrelationId },
        details: { decision: d.decision, reason: d.reason, destination: d.destination, connectionId: c.connectionId, auditCorrelationId: d.auditCorrelationId },
      }),
    );
  }
}

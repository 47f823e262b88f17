import type { ConnectionProviderDefinition } from '@openwop-host/plugin-sdk';

export type ConsentAccess = 'read' | 'write';

export interface ConsentGroup {
  key: string;
  label: string;
  access: ConsentAccess;
  /** The provider's raw scope strings requested in this step. */
  scopes: string[];
}

export interface ConsentStep {
  groups: ConsentGroup[];
  includesWrite: boolean;
}

export interface ConsentPlan {
  scopeModel: 'groups' | 'coarse' | 'capabilities';
  steps: ConsentStep[];
}

/**
 * RFC 0095 clause 4: the initial authorization asks for read groups only; write groups are a
 * separate, later re-consent step. Asking for write therefore always yields the read step first
 * (write consent follows an initial read authorization), and a read-only request yields one step.
 */
export function buildConsentPlan(provider: ConnectionProviderDefinition, requested: readonly ConsentAccess[]): ConsentPlan {
  const scopes = provider.auth.scopes ?? {};
  const toGroups = (access: ConsentAccess): ConsentGroup[] =>
    (scopes[access] ?? []).map((g) => ({ key: g.key, label: g.label, access, scopes: [...g.scopes] }));
  const wantsWrite = requested.includes('write');
  const steps: ConsentStep[] = [];
  if (requested.includes('read') || wantsWrite) steps.push({ groups: toGroups('read'), includesWrite: false });
  if (wantsWrite) steps.push({ groups: toGroups('write'), includesWrite: true });
  return { scopeModel: provider.auth.scopeModel ?? 'groups', steps };
}

import { DispatchDecision, DispatchPolicy, getDispatchPolicy, SAFETY_TIERS } from '../../api/tool-catalog';
import { Badge, DataTable, ErrorBanner, Facts, Loading, Section, useLoad, when } from '../../ui';

const SOURCES: Record<DispatchPolicy['source'], string> = {
  default: 'nothing configured: every call is allowed and no decision is recorded',
  config: "the host config's tools.dispatchPolicy",
  tenant: "this tenant's override over the host config",
};

interface ToolRule {
  pattern: string;
  decision: DispatchDecision;
  from: string;
}

/** The per-tool rules in force, each with the layer that set it (the tenant's override wins over the config). */
function toolRules(p: DispatchPolicy): ToolRule[] {
  return Object.keys(p.tools)
    .sort()
    .map((pattern) => ({ pattern, decision: p.tools[pattern], from: p.override?.tools?.[pattern] !== undefined ? 'tenant override' : 'host config' }));
}

/**
 * The tenant's governed dispatch policy, read-only: the decision per safety tier and per tool (an exact id, or a
 * prefix ending in `*`), the layer it comes from and its revision. It is changed with
 * `PUT /v1/tools/dispatch-policy` or `openwop-host tools policy set`.
 */
export function DispatchPolicyView() {
  const policy = useLoad(getDispatchPolicy, []);
  const p = policy.data;
  return (
    <Section title="Tool dispatch policy">
      <ErrorBanner error={policy.error} />
      {policy.loading && !p ? <Loading what="the dispatch policy" /> : null}
      {p ? (
        <>
          <Facts
            items={[
              ['Revision', <code>{p.revision}</code>],
              ['Source', `${p.source} (${SOURCES[p.source]})`],
              ['Last changed', p.updatedAt ? `${when(p.updatedAt)}${p.updatedBy ? ` by ${p.updatedBy}` : ''}` : 'never'],
            ]}
          />
          <div class="two">
            <div>
              <h3>Decision per safety tier</h3>
              <DataTable
                list={{ items: SAFETY_TIERS.map((tier) => ({ tier, decision: p.tiers[tier] })), loading: false, error: null }}
                caption="Decision per safety tier"
                noun={['tier', 'tiers']}
                status={null}
                rowKey={(r) => r.tier}
                columns={[
                  { header: 'Safety tier', cell: (r) => <Badge value={r.tier} /> },
                  { header: 'Decision', cell: (r) => <Badge value={r.decision} /> },
                ]}
              />
            </div>
            <div>
              <h3>Per-tool rules (they win over the tier)</h3>
              <DataTable
                list={{ items: toolRules(p), loading: false, error: null }}
                caption="Per-tool rules"
                noun={['rule', 'rules']}
                empty="No per-tool rule: every tool follows its tier."
                status={null}
                rowKey={(r) => r.pattern}
                columns={[
                  { header: 'Tool id or prefix', cell: (r) => <code>{r.pattern}</code> },
                  { header: 'Decision', cell: (r) => <Badge value={r.decision} /> },
                  { header: 'Set by', cell: (r) => r.from },
                ]}
              />
            </div>
          </div>
          <p class="muted">
            Read-only here: change it with <code>PUT /v1/tools/dispatch-policy</code> or <code>openwop-host tools policy set --file policy.json</code>.
          </p>
        </>
      ) : null}
    </Section>
  );
}

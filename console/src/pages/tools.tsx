import { useMemo, useState } from 'preact/hooks';
import { api, call, Schemas } from '../api/client';
import { Badge, ChoiceFilter, ErrorBanner, JsonBlock, Loading, Section, useLoad } from '../ui';

type Tool = Schemas['ToolDescriptor'];
type CompactTool = Schemas['CompactToolDescriptor'];

const SOURCES = ['node-pack', 'workflow', 'mcp', 'connector', 'host-extension'] as const;
const TIERS = ['pure', 'read', 'write', 'exec'] as const;

/** GET /v1/tools answers a bare array (standard view) or {tools} (compact view). */
function toolsOf(body: Tool[] | { tools: CompactTool[] }): Array<Tool | CompactTool> {
  return Array.isArray(body) ? body : body.tools;
}

function ToolDetail({ toolId, compact, onClose }: { toolId: string; compact: boolean; onClose: () => void }) {
  const tool = useLoad(
    () => call(api.GET('/v1/tools/{toolId}', { params: { path: { toolId }, query: compact ? { view: 'compact' } : {} } })),
    [toolId, compact],
  );
  const t = tool.data as (Tool & CompactTool) | undefined;
  return (
    <Section
      title={`Tool ${toolId}`}
      actions={
        <button type="button" onClick={onClose}>
          Close detail
        </button>
      }
    >
      <ErrorBanner error={tool.error} />
      {tool.loading && !t ? <Loading what="the descriptor" /> : null}
      {t ? (
        <>
          <dl class="facts">
            <dt>Title</dt>
            <dd>{t.title ?? '—'}</dd>
            <dt>Source</dt>
            <dd>{t.source}</dd>
            <dt>Safety tier</dt>
            <dd>
              <Badge value={t.safetyTier} />
            </dd>
            {'approval' in t && t.approval ? (
              <>
                <dt>Approval</dt>
                <dd>{t.approval}</dd>
              </>
            ) : null}
            {'egress' in t && t.egress ? (
              <>
                <dt>Egress</dt>
                <dd>{t.egress}</dd>
              </>
            ) : null}
            {'replayPolicy' in t && t.replayPolicy ? (
              <>
                <dt>Replay policy</dt>
                <dd>{t.replayPolicy}</dd>
              </>
            ) : null}
            {'costHint' in t && t.costHint ? (
              <>
                <dt>Cost hint</dt>
                <dd>{t.costHint}</dd>
              </>
            ) : null}
            <dt>Description</dt>
            <dd>{t.description ?? '—'}</dd>
          </dl>
          <div class="two">
            <JsonBlock label="Input schema" value={t.inputSchema} />
            {compact ? null : <JsonBlock label="Output schema" value={t.outputSchema} />}
          </div>
          {!compact && 'auth' in t && t.auth ? <JsonBlock label="Auth" value={t.auth} /> : null}
        </>
      ) : null}
    </Section>
  );
}

export function ToolsPage() {
  const [compact, setCompact] = useState(false);
  const [search, setSearch] = useState('');
  const [source, setSource] = useState('');
  const [tier, setTier] = useState('');
  const [selected, setSelected] = useState<string | null>(null);
  const list = useLoad(
    async () => toolsOf(await call(api.GET('/v1/tools', { params: { query: { ...(compact ? { view: 'compact' as const } : {}), ...(source ? { source: source as (typeof SOURCES)[number] } : {}) } } }))),
    [compact, source],
  );
  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (list.data ?? []).filter(
      (t) => (!tier || t.safetyTier === tier) && (!q || [t.toolId, t.title ?? '', t.description ?? ''].some((s) => s.toLowerCase().includes(q))),
    );
  }, [list.data, search, tier]);

  return (
    <>
      <form class="filters" role="search" aria-label="Filter tools" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search
          <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} placeholder="id, title or description" />
        </label>
        <ChoiceFilter label="Source" all="All sources" options={SOURCES} value={source} onChange={setSource} />
        <ChoiceFilter label="Safety tier" all="All tiers" options={TIERS} value={tier} onChange={setTier} />
        <label class="check">
          <input type="checkbox" checked={compact} onChange={(e) => setCompact((e.target as HTMLInputElement).checked)} /> Compact view (RFC 0112)
        </label>
      </form>
      <ErrorBanner error={list.error} />
      {selected ? <ToolDetail toolId={selected} compact={compact} onClose={() => setSelected(null)} /> : null}
      <Section title="Catalog">
        {list.loading && !list.data ? <Loading what="tools" /> : null}
        <p class="muted" role="status">
          {list.data ? `${shown.length} of ${list.data.length} tools` : ''}
        </p>
        {shown.length ? (
          <table class="list">
            <caption class="sr-only">Tools</caption>
            <thead>
              <tr>
                <th scope="col">Tool</th>
                <th scope="col">Title</th>
                <th scope="col">Source</th>
                <th scope="col">Safety tier</th>
                {compact ? null : <th scope="col">Description</th>}
              </tr>
            </thead>
            <tbody>
              {shown.map((t) => (
                <tr key={t.toolId} class={selected === t.toolId ? 'selected' : ''}>
                  <td>
                    <button type="button" class="link" onClick={() => setSelected(t.toolId)} aria-label={`Show tool ${t.toolId}`}>
                      {t.toolId}
                    </button>
                  </td>
                  <td>{t.title ?? '—'}</td>
                  <td>{t.source}</td>
                  <td>
                    <Badge value={t.safetyTier} />
                  </td>
                  {compact ? null : <td class="desc">{t.description ?? ''}</td>}
                </tr>
              ))}
            </tbody>
          </table>
        ) : list.data ? (
          <p>No tool matches.</p>
        ) : null}
      </Section>
    </>
  );
}

import { useMemo, useState } from 'preact/hooks';
import { getTool, listTools, SAFETY_TIERS, TOOL_SOURCES, ToolSource } from '../api/tool-catalog';
import { href, link } from '../routes';
import { Badge, BreakableId, ChoiceFilter, DataTable, ErrorBanner, Facts, JsonBlock, Loading, loadedList, Section, useLive, useLoad } from '../ui';

function ToolDetail({ toolId, compact }: { toolId: string; compact: boolean }) {
  const tool = useLoad(() => getTool(toolId, compact), [toolId, compact]);
  const t = tool.data;
  return (
    <Section
      title={`Tool ${toolId}`}
      actions={
        <a class="button" href={href('tools')}>
          Close detail
        </a>
      }
    >
      <ErrorBanner error={tool.error} />
      {tool.loading && !t ? <Loading what="the descriptor" /> : null}
      {t ? (
        <>
          <Facts
            items={[
              ['Title', t.title ?? '—'],
              ['Source', t.source],
              ['Safety tier', <Badge value={t.safetyTier} />],
              'approval' in t && t.approval && ['Approval', t.approval],
              'egress' in t && t.egress && ['Egress', t.egress],
              'replayPolicy' in t && t.replayPolicy && ['Replay policy', t.replayPolicy],
              'costHint' in t && t.costHint && ['Cost hint', t.costHint],
              ['Description', t.description ?? '—'],
            ]}
          />
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

/** The tool catalog, searched and filtered here, and the tool the address names (`#/tools/<toolId>`). */
export function ToolsPage({ selected }: { selected?: string }) {
  const [compact, setCompact] = useState(false);
  const [search, setSearch] = useState('');
  const [source, setSource] = useState<ToolSource | ''>('');
  const [tier, setTier] = useState('');
  const tools = useLoad(() => listTools({ compact, source: source || undefined }), [compact, source]);
  // No stream reports the catalog changing (a pack installed, an MCP server's tools): read again every 30 s while shown.
  useLive(tools.reload, { pollMs: 30_000 });
  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    return tools.data?.filter((t) => (!tier || t.safetyTier === tier) && (!q || [t.toolId, t.title ?? '', t.description ?? ''].some((s) => s.toLowerCase().includes(q))));
  }, [tools.data, search, tier]);
  return (
    <>
      {selected ? <ToolDetail toolId={selected} compact={compact} /> : null}
      <Section title="Catalog">
        <DataTable
          list={{ ...loadedList(tools), items: shown }}
          caption="Tools"
          noun={['tool', 'tools']}
          empty="No tool matches."
          status={tools.data && shown ? `${shown.length} of ${tools.data.length} tools` : ''}
          rowKey={(t) => t.toolId}
          selected={selected}
          search
          filters={
            <>
              <label>
                Search
                <input type="search" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} placeholder="id, title or description" />
              </label>
              <ChoiceFilter label="Source" all="All sources" options={TOOL_SOURCES} value={source} onChange={setSource} />
              <ChoiceFilter label="Safety tier" all="All tiers" options={SAFETY_TIERS} value={tier as (typeof SAFETY_TIERS)[number] | ''} onChange={setTier} />
              <label class="check">
                <input type="checkbox" checked={compact} onChange={(e) => setCompact((e.target as HTMLInputElement).checked)} /> Compact view (RFC 0112)
              </label>
            </>
          }
          columns={[
            {
              header: 'Tool',
              cell: (t) => (
                <a href={link.tool(t.toolId)} aria-label={`Show tool ${t.toolId}`}>
                  <BreakableId id={t.toolId} />
                </a>
              ),
            },
            { header: 'Title', cell: (t) => t.title ?? '—' },
            { header: 'Source', cell: (t) => t.source },
            { header: 'Safety tier', cell: (t) => <Badge value={t.safetyTier} /> },
            !compact && { header: 'Description', class: 'desc', cell: (t) => t.description ?? '' },
          ]}
        />
      </Section>
    </>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { ApiError } from '../api/client';
import { Bundle, exportBundle, exportKinds, importBundle, ImportPlan as Plan, ImportResult as Result } from '../api/portability';
import { can, Identity } from '../session';
import { asApiError, Badge, DataTable, ErrorBanner, Notice, Section, useLoad } from '../ui';

/** Seconds since `busy` became true, for the progress line of long operations. */
function useElapsed(busy: boolean): number {
  const [s, setS] = useState(0);
  useEffect(() => {
    if (!busy) return;
    const start = Date.now();
    setS(0);
    const t = setInterval(() => setS(Math.round((Date.now() - start) / 1000)), 500);
    return () => clearInterval(t);
  }, [busy]);
  return s;
}

function Export({ tenant }: { tenant: string }) {
  const kindsOffered = useLoad(exportKinds, []);
  const [kinds, setKinds] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [received, setReceived] = useState(0);
  const [total, setTotal] = useState<number | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const elapsed = useElapsed(busy);

  const run = async () => {
    setBusy(true);
    setError(null);
    setDone(null);
    setReceived(0);
    try {
      const { blob, bundle, bytes: n } = await exportBundle(kinds, (got, size) => (setReceived(got), setTotal(size)));
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `openwop-export-${tenant}-${new Date().toISOString().slice(0, 19).replace(/[:T]/g, '-')}.json`;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      setDone(`Exported ${bundle.items.length} item${bundle.items.length === 1 ? '' : 's'} (${n} bytes) as ${a.download}.`);
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Section title="Export">
      <p class="muted">A secret-free bundle of the tenant’s reusable estate; credentials travel as references to bind again.</p>
      {kindsOffered.data && kindsOffered.data.length ? (
        <fieldset>
          <legend>Kinds (none checked: every kind)</legend>
          {kindsOffered.data.map((k) => (
            <label key={k}>
              <input type="checkbox" checked={kinds.includes(k)} onChange={(e) => setKinds((ks) => ((e.target as HTMLInputElement).checked ? [...ks, k] : ks.filter((x) => x !== k)))} /> {k}
            </label>
          ))}
        </fieldset>
      ) : null}
      <div class="actions">
        <button type="button" class="primary" disabled={busy} onClick={() => void run()}>
          Download export
        </button>
      </div>
      {busy ? (
        <div class="meter" role="status">
          <span class="meter-label">Exporting</span>
          <progress value={total ? received : undefined} max={total} aria-label="Export progress" />
          <span class="meter-text">
            {received} bytes{total ? ` of ${total}` : ''}, {elapsed} s
          </span>
        </div>
      ) : null}
      <Notice text={done} />
      <ErrorBanner error={error} />
    </Section>
  );
}

type Item = { action: string; kind: string; ref: string; reason?: string; secretsToRebind?: string[] };

function ItemsTable({ items, caption }: { items: Item[]; caption: string }) {
  return (
    <DataTable
      list={{ items, loading: false, error: null }}
      caption={caption}
      noun={['item', 'items']}
      status={null}
      rowKey={(i) => `${i.action} ${i.kind} ${i.ref}`}
      columns={[
        { header: 'Action', cell: (i) => <Badge value={i.action} /> },
        { header: 'Kind', cell: (i) => i.kind },
        { header: 'Ref', cell: (i) => <code>{i.ref}</code> },
        { header: 'Reason', cell: (i) => `${i.reason ?? ''}${i.secretsToRebind?.length ? ` (rebind: ${i.secretsToRebind.join(', ')})` : ''}` },
      ]}
    />
  );
}

function Import() {
  const [text, setText] = useState('');
  const [fileName, setFileName] = useState<string | null>(null);
  const [plan, setPlan] = useState<{ for: string; plan: Plan } | null>(null);
  const [result, setResult] = useState<Result | null>(null);
  const [busy, setBusy] = useState<'plan' | 'apply' | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const elapsed = useElapsed(busy === 'apply');

  const parse = (): Bundle | null => {
    try {
      return JSON.parse(text) as Bundle;
    } catch (e) {
      setError(new ApiError(0, 'validation_error', `The bundle is not valid JSON: ${e instanceof Error ? e.message : e}`));
      return null;
    }
  };
  const go = async (dryRun: boolean) => {
    setError(null);
    const bundle = parse();
    if (!bundle) return;
    setBusy(dryRun ? 'plan' : 'apply');
    try {
      const answer = await importBundle(bundle, dryRun);
      if (answer.dryRun) {
        setPlan({ for: text, plan: answer });
        setResult(null);
      } else {
        setResult(answer);
        setPlan(null);
      }
    } catch (e) {
      setError(asApiError(e));
    } finally {
      setBusy(null);
    }
  };
  const planCurrent = plan && plan.for === text ? plan.plan : null;
  return (
    <Section title="Import">
      <p class="muted">Choose a bundle; the host first shows what it would do (a dry run that writes nothing), then applies it on request.</p>
      <div class="stack">
        <label for="bundle-file">Bundle file (JSON)</label>
        <input
          id="bundle-file"
          type="file"
          accept="application/json,.json"
          onChange={(e) => {
            const f = (e.target as HTMLInputElement).files?.[0];
            if (!f) return;
            setFileName(f.name);
            void f.text().then((t) => {
              // Shown pretty-printed when it is JSON; sent as parsed, so formatting never changes the bundle.
              let shown = t;
              try {
                shown = JSON.stringify(JSON.parse(t), null, 2);
              } catch {
                /* not JSON: shown as is, and the plan step says why it cannot be sent */
              }
              setText(shown);
              setResult(null);
            });
          }}
        />
        <label for="bundle-text">…or paste the bundle</label>
        <textarea id="bundle-text" value={text} onInput={(e) => (setText((e.target as HTMLTextAreaElement).value), setFileName(null))} spellcheck={false} />
        <div class="actions">
          <button type="button" class="primary" disabled={!text.trim() || busy !== null} onClick={() => void go(true)}>
            Plan import (dry run)
          </button>
          <button type="button" disabled={!planCurrent || busy !== null} onClick={() => void go(false)} title={planCurrent ? undefined : 'Plan the import first'}>
            Apply import
          </button>
        </div>
        {busy ? (
          <div class="meter" role="status">
            <span class="meter-label">{busy === 'plan' ? 'Planning' : 'Applying'}</span>
            <progress aria-label={busy === 'plan' ? 'Planning the import' : 'Applying the import'} />
            <span class="meter-text">{busy === 'apply' ? `${elapsed} s` : ''}</span>
          </div>
        ) : null}
        <ErrorBanner error={error} />
      </div>
      {planCurrent ? (
        <div aria-label="Dry-run plan" role="region">
          <h3>Dry-run plan{fileName ? ` for ${fileName}` : ''}: nothing written yet</h3>
          <p>
            {planCurrent.itemCount} items from <code>{planCurrent.bundleOrigin}</code>: {planCurrent.counts.create} to create, {planCurrent.counts.update} to update,{' '}
            {planCurrent.counts.skip} to skip, {planCurrent.counts.conflict} in conflict.
          </p>
          {planCurrent.secretsToRebind.length ? <p>Credentials to bind again after the import: {planCurrent.secretsToRebind.join(', ')}</p> : null}
          <ItemsTable items={planCurrent.items} caption="Planned import actions" />
        </div>
      ) : null}
      {result ? (
        <div aria-label="Import result" role="region">
          <h3>Import applied</h3>
          <p class="notice" role="status">
            {result.counts.created} created, {result.counts.updated} updated, {result.counts.skipped} skipped, {result.counts.failed} failed.
          </p>
          <ItemsTable items={result.items} caption="Import results" />
        </div>
      ) : null}
    </Section>
  );
}

export function PortabilityPage({ identity }: { identity: Identity }) {
  return (
    <>
      {can(identity, 'portability:export') ? <Export tenant={identity.tenant} /> : null}
      {can(identity, 'portability:import') ? <Import /> : null}
    </>
  );
}

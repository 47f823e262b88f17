import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api/client';
import { sideBySide, stableJson } from './diff';

function asApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return new ApiError(0, 'console_error', e instanceof Error ? e.message : String(e));
}

/** A server error, shown with its canonical `error` code and `message` (and details when present). */
export function ErrorBanner({ error }: { error: ApiError | null | undefined }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <strong>
        <code class="error-code">{error.error}</code>
        {error.status ? <span class="muted"> (HTTP {error.status})</span> : null}
      </strong>
      <p class="error-message">{error.message}</p>
      {error.details !== undefined ? (
        <details>
          <summary>Details</summary>
          <pre>{stableJson(error.details)}</pre>
        </details>
      ) : null}
    </div>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** Loads data when the dependencies change; keeps the last data while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setLoading(true);
    load().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(null);
        setLoading(false);
      },
      (e: unknown) => {
        if (!live) return;
        setError(asApiError(e));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

/** Runs a write action: one at a time, its error kept for display. */
export function useAction() {
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(async <T,>(label: string, fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(label);
    setError(null);
    try {
      return await fn();
    } catch (e) {
      setError(asApiError(e));
      return undefined;
    } finally {
      setBusy(null);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function JsonBlock({ value, label }: { value: unknown; label: string }) {
  return (
    <figure class="json">
      <figcaption>{label}</figcaption>
      <pre tabIndex={0} aria-label={label}>
        {value === undefined ? '(none)' : stableJson(value)}
      </pre>
    </figure>
  );
}

export function Badge({ value }: { value: string }) {
  return <span class={`badge badge-${value.replace(/[^a-z-]/gi, '')}`}>{value}</span>;
}

/** A labelled progress bar; without a maximum it is indeterminate. */
export function Meter({ label, value, max, text }: { label: string; value: number; max?: number; text?: string }) {
  const over = max !== undefined && value >= max;
  return (
    <div class={`meter${over ? ' meter-over' : ''}`}>
      <span class="meter-label">{label}</span>
      <progress value={max === undefined ? undefined : Math.min(value, max)} max={max} aria-label={label} />
      <span class="meter-text">{text ?? (max === undefined ? `${value} (no bound)` : `${value} of ${max}`)}</span>
    </div>
  );
}

/** A destructive action asks once more, inline (no native dialog), and keeps keyboard focus in place. */
export function ConfirmButton(props: { label: string; confirmLabel: string; question: string; onConfirm: () => void; disabled?: boolean; danger?: boolean }) {
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class={props.danger ? 'danger' : ''} disabled={props.disabled} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        ref={confirmRef}
        class="danger"
        onClick={() => {
          setAsking(false);
          props.onConfirm();
        }}
      >
        {props.confirmLabel}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** Two JSON documents side by side, changed lines marked (not by colour alone: a sign column too). */
export function DiffView({ before, after, beforeLabel, afterLabel }: { before: unknown; after: unknown; beforeLabel: string; afterLabel: string }) {
  const rows = sideBySide(stableJson(before), stableJson(after));
  const changed = rows.filter((r) => r.kind === 'changed').length;
  return (
    <div class="diff" tabIndex={0} role="region" aria-label={`Differences between ${beforeLabel} and ${afterLabel}`}>
      <p class="muted">{changed === 0 ? 'No differences.' : `${changed} changed line${changed === 1 ? '' : 's'}.`}</p>
      <table>
        <caption class="sr-only">
          {beforeLabel} compared with {afterLabel}
        </caption>
        <thead>
          <tr>
            <th scope="col" colSpan={2}>
              {beforeLabel}
            </th>
            <th scope="col" colSpan={2}>
              {afterLabel}
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r, k) => (
            <tr key={k} class={r.kind}>
              <td class="ln">{r.leftNo ?? ''}</td>
              <td class={r.kind === 'changed' && r.left !== undefined ? 'del' : ''}>
                {r.kind === 'changed' && r.left !== undefined ? <span class="sign">−</span> : null}
                <code>{r.left ?? ''}</code>
              </td>
              <td class="ln">{r.rightNo ?? ''}</td>
              <td class={r.kind === 'changed' && r.right !== undefined ? 'add' : ''}>
                {r.kind === 'changed' && r.right !== undefined ? <span class="sign">+</span> : null}
                <code>{r.right ?? ''}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Section({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = `h-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section aria-labelledby={id} class="card">
      <div class="card-head">
        <h2 id={id}>{title}</h2>
        {actions ? <div class="actions">{actions}</div> : null}
      </div>
      {children}
    </section>
  );
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** A labelled filter select: "all" (the empty value) or one of `options`. */
export function ChoiceFilter<T extends string>({ label, all, options, value, onChange }: { label: string; all: string; options: readonly T[]; value: T | ''; onChange: (v: T | '') => void }) {
  return (
    <label>
      {label}
      <select value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value as T | '')}>
        <option value="">{all}</option>
        {options.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
    </label>
  );
}

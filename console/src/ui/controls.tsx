import { Fragment, type ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { stableJson } from '../diff';

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

/** A confirmation of what an action did, announced to screen readers. */
export function Notice({ text }: { text: string | null | undefined }) {
  if (!text) return null;
  return (
    <p class="notice" role="status">
      {text}
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

/** A definition list of facts (label, value, optional class of the value); a fact whose value is null, undefined or false is left out. */
export function Facts({ items }: { items: Array<[label: string, value: ComponentChildren, cls?: string] | null | false | undefined | '' | 0> }) {
  return (
    <dl class="facts">
      {items.map((f) =>
        f && f[1] !== null && f[1] !== undefined && f[1] !== false ? (
          <Fragment key={f[0]}>
            <dt>{f[0]}</dt>
            <dd class={f[2]}>{f[1]}</dd>
          </Fragment>
        ) : null,
      )}
    </dl>
  );
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
export function ConfirmButton(props: { label: string; confirmLabel: string; question: string; onConfirm: () => void; disabled?: boolean; danger?: boolean; ariaLabel?: string }) {
  const [asking, setAsking] = useState(false);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) confirmRef.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class={props.danger ? 'danger' : ''} disabled={props.disabled} onClick={() => setAsking(true)} aria-label={props.ariaLabel}>
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

export function Section({ title, heading, children, actions }: { title: string; heading?: ComponentChildren; children: ComponentChildren; actions?: ComponentChildren }) {
  const id = `h-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return (
    <section aria-labelledby={id} class="card">
      <div class="card-head">
        <h2 id={id}>{heading ?? title}</h2>
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

/** A duration for people: 850 ms, 12.4 s, 3 min, 5 h, 2 d. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
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

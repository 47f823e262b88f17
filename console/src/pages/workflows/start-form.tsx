import { useState } from 'preact/hooks';
import { ApiError } from '../../api/client';
import { RunSnapshot, startRun } from '../../api/runs';
import type { WorkflowSummary } from '../../api/workflows';
import { ErrorBanner, useAction } from '../../ui';
import { InputField, inputFields, inputsOf, problemsByField } from './input-form';

function Field({ id, field, value, problems, onChange }: { id: string; field: InputField; value: string; problems: string[]; onChange: (v: string) => void }) {
  const describedBy = [field.description ? `${id}-desc` : '', problems.length ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-describedby': describedBy, 'aria-invalid': problems.length ? ('true' as const) : undefined };
  const label = (
    <label for={id}>
      {field.label}
      {field.required ? <span aria-hidden="true"> *</span> : null}
      {field.required ? <span class="sr-only"> (required)</span> : null}
      {field.label !== field.name ? <code class="muted"> {field.name}</code> : null}
    </label>
  );
  let control;
  if (field.kind === 'boolean') {
    control = <input type="checkbox" {...common} checked={value === 'true'} onChange={(e) => onChange(String((e.target as HTMLInputElement).checked))} />;
  } else if (field.kind === 'choice') {
    control = (
      <select {...common} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        <option value="">{field.required ? 'Choose…' : '(not set)'}</option>
        {field.choices!.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
    );
  } else if (field.kind === 'json') {
    control = <textarea {...common} class="json-input" rows={3} value={value} placeholder={field.example} spellcheck={false} onInput={(e) => onChange((e.target as HTMLTextAreaElement).value)} />;
  } else {
    control = (
      <input
        {...common}
        type="text"
        inputMode={field.kind === 'text' ? undefined : field.kind === 'integer' ? 'numeric' : 'decimal'}
        value={value}
        placeholder={field.example}
        autocomplete="off"
        onInput={(e) => onChange((e.target as HTMLInputElement).value)}
      />
    );
  }
  return (
    <div class={`field${problems.length ? ' invalid' : ''}`}>
      {label}
      {control}
      {field.description ? (
        <span id={`${id}-desc`} class="muted field-desc">
          {field.description}
        </span>
      ) : null}
      {problems.length ? (
        <ul id={`${id}-err`} class="field-errors">
          {problems.map((p, i) => (
            <li key={i}>{p}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

/**
 * Starts a run of one workflow from a form of the inputs it declares. What the host refuses (400
 * `validation_error`) is shown on the fields its problem paths name; a workflow declaring no inputs
 * takes a JSON object instead.
 */
export function StartForm({ workflow, onStarted }: { workflow: WorkflowSummary; onStarted: (run: RunSnapshot) => void }) {
  const fields = inputFields(workflow.parameters);
  const [values, setValues] = useState<Record<string, string>>(() => Object.fromEntries(fields.map((f) => [f.name, f.initial])));
  const [raw, setRaw] = useState('{}');
  const [local, setLocal] = useState<Record<string, string>>({});
  const action = useAction();
  const base = `start-${workflow.workflowId.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  const refused = action.error?.status === 400 && action.error.error === 'validation_error' ? problemsByField(fields, action.error.details) : {};
  const submit = (e: Event) => {
    e.preventDefault();
    let inputs: Record<string, unknown>;
    if (fields.length) {
      const made = inputsOf(fields, values);
      setLocal(made.problems);
      if (Object.keys(made.problems).length) return;
      inputs = made.inputs;
    } else {
      try {
        inputs = raw.trim() ? (JSON.parse(raw) as Record<string, unknown>) : {};
      } catch (err) {
        void action.run('start', () => Promise.reject(new ApiError(0, 'invalid_json', `The inputs are not valid JSON: ${err instanceof Error ? err.message : String(err)}`)));
        return;
      }
    }
    void action.run('start', () => startRun({ workflowId: workflow.workflowId, inputs })).then((run) => run && onStarted(run));
  };
  const formProblems = refused[''] ?? [];
  return (
    <form class="stack start-form" onSubmit={submit} aria-label={`Start ${workflow.name}`} noValidate>
      {fields.map((f) => (
        <Field
          key={f.name}
          id={`${base}-${f.name}`}
          field={f}
          value={values[f.name] ?? ''}
          problems={[...(local[f.name] ? [local[f.name]] : []), ...(refused[f.name] ?? [])]}
          onChange={(v) => setValues((old) => ({ ...old, [f.name]: v }))}
        />
      ))}
      {!fields.length ? (
        <div class="field">
          <label for={`${base}-raw`}>Inputs (JSON: this workflow declares none)</label>
          <textarea id={`${base}-raw`} class="json-input" rows={3} value={raw} spellcheck={false} onInput={(e) => setRaw((e.target as HTMLTextAreaElement).value)} />
        </div>
      ) : null}
      {formProblems.length ? (
        <ul class="field-errors" aria-label="Problems with the inputs">
          {formProblems.map((p, i) => (
            <li key={i}>{p}</li>
          ))}
        </ul>
      ) : null}
      <div class="actions">
        <button type="submit" class="primary" disabled={Boolean(action.busy)}>
          Start run
        </button>
      </div>
      <ErrorBanner error={action.error} />
    </form>
  );
}

import { useState } from 'preact/hooks';
import { ApiError } from '../../api/client';
import { RunSnapshot, startRun } from '../../api/runs';
import { ErrorBanner, Section, useAction } from '../../ui';

/** Starts a run of a chain installed for the tenant; the host validates the body and its errors are shown as sent. */
export function StartRun({ onStarted }: { onStarted: (run: RunSnapshot) => void }) {
  const [workflowId, setWorkflowId] = useState('');
  const [inputs, setInputs] = useState('{}');
  const action = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void action
      .run('start', async () => {
        let parsed: unknown;
        try {
          parsed = inputs.trim() ? JSON.parse(inputs) : undefined;
        } catch (err) {
          throw new ApiError(0, 'invalid_json', `The inputs are not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
        }
        // Sent as typed: the host is the one validator of the body, and its validation_error is shown as it answers.
        return startRun({ workflowId: workflowId.trim(), ...(parsed === undefined ? {} : { inputs: parsed as Record<string, unknown> }) });
      })
      .then((run) => run && onStarted(run));
  };
  return (
    <Section title="Start a run">
      <form class="stack" onSubmit={submit} aria-label="Start a run">
        <label for="run-workflow">Workflow id</label>
        <input id="run-workflow" value={workflowId} onInput={(e) => setWorkflowId((e.target as HTMLInputElement).value)} placeholder="chainId or workflow:chainId" autocomplete="off" />
        <label for="run-inputs">Inputs (JSON)</label>
        <textarea id="run-inputs" value={inputs} onInput={(e) => setInputs((e.target as HTMLTextAreaElement).value)} spellcheck={false} rows={4} />
        <div class="actions">
          <button type="submit" class="primary" disabled={Boolean(action.busy)}>
            Start run
          </button>
        </div>
        <ErrorBanner error={action.error} />
      </form>
    </Section>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { Proposal, reviseProposal } from '../../api/proposals';
import { stableJson } from '../../diff';
import { DiffView, ErrorBanner, Section, useAction } from '../../ui';

/** Edits the artifact as JSON; the diff against the current revision is shown before it can be saved. */
export function Reviser({ proposal, onSaved }: { proposal: Proposal; onSaved: (p: Proposal) => void }) {
  const [text, setText] = useState(stableJson(proposal.artifact));
  const [note, setNote] = useState('');
  const action = useAction();
  useEffect(() => setText(stableJson(proposal.artifact)), [proposal.id, proposal.updatedAt]);
  let parsed: unknown;
  let parseError: string | null = null;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    parseError = e instanceof Error ? e.message : 'not JSON';
  }
  const changed = !parseError && stableJson(parsed) !== stableJson(proposal.artifact);
  return (
    <Section title="Revise the artifact">
      <div class="stack">
        <label for="artifact-editor">Artifact (JSON)</label>
        <textarea id="artifact-editor" value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} spellcheck={false} aria-describedby="artifact-editor-status" />
        <p id="artifact-editor-status" class="muted" role="status">
          {parseError ? `Not valid JSON: ${parseError}` : changed ? 'Edited: the changes are shown below.' : 'Unchanged.'}
        </p>
        {changed ? <DiffView before={proposal.artifact} after={parsed} beforeLabel="Current revision" afterLabel="Your edit" /> : null}
        <label for="revision-note">Note (optional)</label>
        <input id="revision-note" value={note} onInput={(e) => setNote((e.target as HTMLInputElement).value)} maxLength={2000} />
        <div class="actions">
          <button
            type="button"
            class="primary"
            disabled={!changed || Boolean(action.busy)}
            onClick={() => void action.run('revise', () => reviseProposal(proposal.id, parsed, note || undefined)).then((p) => p && (setNote(''), onSaved(p)))}
          >
            Save revision
          </button>
        </div>
        <ErrorBanner error={action.error} />
      </div>
    </Section>
  );
}

import { sideBySide, stableJson } from '../diff';

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

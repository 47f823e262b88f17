import type { Proposal } from '../../api/proposals';
import { stableJson } from '../../diff';
import { when } from '../../ui';

export interface Revision {
  label: string;
  artifact: unknown;
}

/**
 * The host keeps the current bytes of a proposal, not its past revisions: the console keeps every
 * revision it has seen in this tab (the one it loaded, each one saved here, and any newer one found on
 * a later visit, even after a reload), so a reviewer can compare any two of them side by side, and
 * always sees the diff of an edit before saving it. Kept in sessionStorage beside the credential and
 * cleared with it on sign-out; artifacts are reviewable content, never credentials.
 */
const REVISIONS_KEY = 'openwop.console.revisions';
const MAX_REVISIONS = 20;
const MAX_PROPOSALS = 50;

function loadSeen(): Record<string, Revision[]> {
  try {
    return JSON.parse(window.sessionStorage.getItem(REVISIONS_KEY) ?? '{}') as Record<string, Revision[]>;
  } catch {
    return {};
  }
}

/** Records the proposal's current revision (when it is new) and answers every revision seen, oldest first. */
export function remember(p: Proposal): Revision[] {
  const seen = loadSeen();
  const key = `${p.owner.tenant}/${p.id}`;
  const list = seen[key] ?? [];
  const last = list[list.length - 1];
  if (!last || stableJson(last.artifact) !== stableJson(p.artifact)) {
    list.push({ label: `Revision ${list.length + 1} (${p.state}, ${when(p.updatedAt ?? p.createdAt)})`, artifact: p.artifact });
  }
  delete seen[key];
  seen[key] = list.slice(-MAX_REVISIONS);
  const keys = Object.keys(seen);
  for (const old of keys.slice(0, Math.max(0, keys.length - MAX_PROPOSALS))) delete seen[old];
  try {
    window.sessionStorage.setItem(REVISIONS_KEY, JSON.stringify(seen));
  } catch {
    /* storage full: the comparison still works for this page view */
  }
  return seen[key];
}

import { useEffect, useRef } from 'preact/hooks';
import { onHostEvents } from '../api/host-events';

/** How often a list reloads when it has no stream to follow (a credential without runs:read). */
const FALLBACK_POLL_MS = 10_000;

/**
 * Keeps a list current by itself: `reload` runs when the tenant's host stream reports an event whose
 * type starts with one of `prefixes` (`approval.`, `proposal.`...), at most once per half second.
 * `pollMs` adds a periodic reload, only for what no stream reports (the runs list: a run's events are in
 * its own stream, and the tenant has no stream of new runs). A credential that may not read the host
 * stream (`stream: false`, it needs runs:read) reloads every 10 s instead. Polls pause while the tab is hidden.
 */
export function useLive(reload: () => void, opts: { prefixes?: string[]; pollMs?: number; stream?: boolean }): void {
  const pending = useRef<ReturnType<typeof setTimeout> | null>(null);
  const prefixes = (opts.prefixes ?? []).join(',');
  const stream = opts.stream !== false && prefixes !== '';
  const pollMs = opts.pollMs ?? (!stream && prefixes ? FALLBACK_POLL_MS : undefined);
  useEffect(() => {
    const soon = () => {
      if (pending.current) return;
      pending.current = setTimeout(() => {
        pending.current = null;
        reload();
      }, 500);
    };
    const wanted = prefixes.split(',');
    const stop = stream ? onHostEvents((type) => wanted.some((p) => type.startsWith(p)) && soon()) : () => undefined;
    const timer = pollMs ? setInterval(() => document.visibilityState === 'visible' && reload(), pollMs) : undefined;
    return () => {
      stop();
      if (timer) clearInterval(timer);
      if (pending.current) clearTimeout(pending.current);
      pending.current = null;
    };
  }, [stream, prefixes, pollMs, reload]);
}

import { randomUUID } from 'node:crypto';
import { NodeExecutionContext, NodeHttp, SafeFetchError } from '@openwop-host/plugin-sdk';
import { argsHash } from '../../tool-catalog';

/** The `agentId` of the audit pairs of calls a node makes through its context: the run engine makes them on its behalf (as core.tool's). */
export const RUN_ENGINE_AGENT_ID = 'openwop-host.run-engine';
/** The `toolName` of a safe fetch in its audit pair. */
export const SAFE_FETCH_TOOL = 'ctx.http.safeFetch';
/** Refusals decided before anything was sent: `forbidden`, the call never started (RFC 0064: no durationMs). */
const NEVER_SENT = new Set(['ssrf', 'upgrade', 'allowlist', 'audience']);

/** Where the audit pair goes: the run's log (`ctx.emit`), or a collector. */
export type AuditEmit = NodeExecutionContext['emit'];

/**
 * `http` with every `safeFetch` bracketed by its RFC 0064 audit pair (toolHooks.prePostEvents): `agent.toolCalled
 * {transport: "http", callId, argsHash, principal}` before it and the `agent.toolReturned {callId, status}` after it,
 * whatever the outcome (a refused call is the one the audit exists for: `forbidden` when the guard refused it before
 * anything was sent, `error` when it failed on the way). Content-free: the hash covers the method and the URL only
 * (headers and body can carry credentials), and nothing of the answer is recorded.
 */
export function auditedHttp(http: NodeHttp, principal: string, emit: AuditEmit): NodeHttp {
  return {
    safeFetch: async (url, init) => {
      const callId = randomUUID();
      const who = { agentId: RUN_ENGINE_AGENT_ID, toolName: SAFE_FETCH_TOOL, callId };
      const method = typeof init?.method === 'string' ? init.method.toUpperCase() : 'GET';
      const called = await emit('agent.toolCalled', { ...who, argsHash: argsHash({ method, url }), principal, transport: 'http' }, { correlationId: callId });
      const after = { correlationId: callId, causationId: called.eventId };
      const started = process.hrtime.bigint();
      const ms = () => Number((process.hrtime.bigint() - started) / 1_000_000n);
      try {
        const res = await http.safeFetch(url, init);
        await emit('agent.toolReturned', { ...who, status: 'ok', durationMs: ms() }, after);
        return res;
      } catch (e) {
        const refusal = e instanceof SafeFetchError ? e.refusal : undefined;
        const error = { code: refusal ? `safe_fetch_${refusal}` : 'safe_fetch_failed', message: refusal ? 'The host refused the fetch.' : 'The fetch failed.' };
        await emit('agent.toolReturned', refusal && NEVER_SENT.has(refusal) ? { ...who, status: 'forbidden', error } : { ...who, status: 'error', durationMs: ms(), error }, after);
        throw e;
      }
    },
  };
}

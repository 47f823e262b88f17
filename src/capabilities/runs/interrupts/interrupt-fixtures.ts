/**
 * The conformance fixtures of interrupts and approvals beyond the v1 set (served, and listed in
 * discovery `fixtures[]`, only with the test seams on; CONFORMANCE_FIXTURES spreads them).
 */
export const INTERRUPT_FIXTURES: Record<string, Record<string, unknown>> = {
  // A gate only urn:conformance:listed-approver may resolve (RFC 0173 §B): the suite's own bearer is refused.
  'conformance-approval-approvers': {
    nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Conformance approvers-list approval', requiredApprovals: 1, approversList: ['urn:conformance:listed-approver'] } }],
  },
  // RFC 0199 §C: needs the starter's own GitHub grant (the suite seeds the tenant's github connection with a
  // static credential, which is no grant): a fresh principal waits on a credential interrupt until it authorizes.
  'conformance-credential': {
    nodes: [{ id: 'connect', typeId: 'core.credential', config: { provider: 'github', scopes: ['read:user'], title: 'Authorize GitHub (read:user)' } }],
  },
  // RFC 0223 (v2-approval-reject-disposition): a rejected gate is a failed source. Routed over an any_failed
  // edge, `on-reject` runs, the all_success `on-accept` never does, and the run completes.
  'conformance-approval-reject-routed': {
    nodes: [
      { id: 'gate', typeId: 'core.approval', config: { title: 'Conformance approval (reject routed)', requiredApprovals: 1 } },
      { id: 'on-reject', typeId: 'core.noop', config: {} },
      { id: 'on-accept', typeId: 'core.noop', config: {} },
    ],
    edges: [
      { from: 'gate', to: 'on-reject', triggerRule: 'any_failed' },
      { from: 'gate', to: 'on-accept', triggerRule: 'all_success' },
    ],
  },
  // Left unresolved for 1500 ms, the gate is resolved rejected by the host (reason timeout) and fails the run;
  // `onTimeout: "approve"` changes nothing (a timeout never grants).
  'conformance-approval-timeout': {
    nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Conformance approval (timeout)', requiredApprovals: 1, timeoutMs: 1500 } }],
  },
  // A rejected gate routed back to itself through `revise` (a loop only a failure closes): asked again, with a new
  // interrupt and key; the first rejection is not its answer.
  'conformance-approval-reject-loopback': {
    nodes: [
      { id: 'start', typeId: 'core.noop', config: {} },
      { id: 'gate', typeId: 'core.approval', config: { title: 'Conformance approval (reject loops back)', requiredApprovals: 1 } },
      { id: 'revise', typeId: 'core.noop', config: {} },
    ],
    edges: [
      { from: 'start', to: 'gate', triggerRule: 'any_success' },
      { from: 'gate', to: 'revise', triggerRule: 'any_failed' },
      { from: 'revise', to: 'gate', triggerRule: 'any_success' },
    ],
  },
  'conformance-approval-timeout-approve': {
    nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Conformance approval (timeout, onTimeout approve)', requiredApprovals: 1, timeoutMs: 1500, onTimeout: 'approve' } }],
  },
};

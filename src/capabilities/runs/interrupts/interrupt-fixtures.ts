/**
 * The conformance fixtures of interrupts and approvals beyond the v1 set (served, and listed in
 * discovery `fixtures[]`, only with the test seams on; CONFORMANCE_FIXTURES spreads them).
 */
export const INTERRUPT_FIXTURES: Record<string, Record<string, unknown>> = {
  // A gate only urn:conformance:listed-approver may resolve (RFC 0173 §B): the suite's own bearer is refused.
  'conformance-approval-approvers': {
    nodes: [{ id: 'gate', typeId: 'core.approval', config: { title: 'Conformance approvers-list approval', requiredApprovals: 1, approversList: ['urn:conformance:listed-approver'] } }],
  },
};

/**
 * The conformance fixtures of sub-workflows and workflow variables (served, like the others in
 * workflow-resolver.service.ts, only while the test seams are on). Shapes follow the official
 * `conformance/fixtures/*.json` (node ids, variables, mappings), in the host's DAG form.
 */
export const WORKFLOW_FIXTURES: Record<string, Record<string, unknown>> = {
  // subworkflow.test.ts: the parent starts the child with core.control.subWorkflow (blocking) and
  // harvests the child's `childResult` as its own `childOutcome`.
  'conformance-subworkflow-parent': {
    nodes: [
      { id: 'parent-start', typeId: 'core.noop', config: {} },
      {
        id: 'subwf-call',
        typeId: 'core.control.subWorkflow',
        config: { workflowId: 'conformance-subworkflow-child', waitForCompletion: true, onChildFailure: 'fail-parent', outputMapping: { childOutcome: 'childResult' } },
      },
      { id: 'parent-end', typeId: 'core.noop', config: {} },
    ],
    edges: [{ from: 'parent-start', to: 'subwf-call' }, { from: 'subwf-call', to: 'parent-end' }],
  },
  'conformance-subworkflow-child': {
    nodes: [{ id: 'set-result', typeId: 'core.setVariable', config: { name: 'childResult', value: 'child-completed' } }],
  },
  // subworkflow-input-mapping.test.ts (RFC 0022 §B): `inputMapping` seeds the child's variables over its defaults.
  'conformance-subworkflow-input-mapping': {
    variables: [{ name: 'currentPrdId', type: 'string', defaultValue: 'prd-1' }],
    nodes: [{ id: 'subwf-call', typeId: 'core.subWorkflow', config: { workflowId: 'conformance-subworkflow-input-mapping-child', inputMapping: { receivedPrdId: 'currentPrdId' } } }],
  },
  'conformance-subworkflow-input-mapping-child': {
    variables: [{ name: 'receivedPrdId', type: 'string', defaultValue: 'baked-in' }],
    nodes: [{ id: 'child-noop', typeId: 'core.noop', config: {} }],
  },
  // The parent declares no `currentPrdId`: the child keeps its default.
  'conformance-subworkflow-input-mapping-no-default': {
    nodes: [{ id: 'subwf-call', typeId: 'core.subWorkflow', config: { workflowId: 'conformance-subworkflow-input-mapping-child', inputMapping: { receivedPrdId: 'currentPrdId' } } }],
  },
  // The child waits on an approval (`child-gate`) while the parent's variable is changed: the seed stays.
  'conformance-subworkflow-mid-run-mutation': {
    variables: [{ name: 'currentPrdId', type: 'string', defaultValue: 'seeded-id' }],
    nodes: [{ id: 'subwf-call', typeId: 'core.subWorkflow', config: { workflowId: 'conformance-subworkflow-mid-run-mutation-child', inputMapping: { receivedPrdId: 'currentPrdId' } } }],
  },
  'conformance-subworkflow-mid-run-mutation-child': {
    variables: [{ name: 'receivedPrdId', type: 'string', defaultValue: 'baked-in' }],
    nodes: [{ id: 'child-gate', typeId: 'core.approval', config: { title: 'Conformance child gate', requiredApprovals: 1 } }],
  },
  // interrupt-parent-child-cascade.test.ts (interrupt-profiles.md §openwop-interrupt-parent-child): the child waits on
  // `child-gate`, the parent reads waiting-approval; cancelling the parent cancels the child, whose gate is then closed.
  'conformance-interrupt-parent-child-cancel': {
    nodes: [{ id: 'subwf-call', typeId: 'core.subWorkflow', config: { workflowId: 'conformance-interrupt-parent-child-cancel-child' } }],
  },
  'conformance-interrupt-parent-child-cancel-child': {
    nodes: [{ id: 'child-gate', typeId: 'core.approval', config: { title: 'Conformance parent/child gate', requiredApprovals: 1 } }],
  },
  // workflow-variable-format.test.ts B2 (RFC 0136): `format` is advisory; an off-format default still completes.
  'conformance-workflow-variable-format-advisory': {
    variables: [{ name: 'contactEmail', type: 'string', format: 'email', defaultValue: 'not-an-email-address' }],
    nodes: [{ id: 'noop', typeId: 'core.noop', config: {} }],
  },
};

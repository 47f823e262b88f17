import { WiringFault } from '../errors/internal-fault';
/**
 * Protocol shapes embedded in the OpenAPI document as components, from the official JSON Schemas
 * in schemas/openwop/ (component name → schema short name).
 */
export const PROTOCOL_SCHEMAS: Record<string, string> = {
  ErrorEnvelope: 'error-envelope',
  RunEvent: 'run-event',
  RunSnapshot: 'run-snapshot',
  WorkflowDefinition: 'workflow-definition',
  ToolDescriptor: 'tool-descriptor',
  CompactToolDescriptor: 'compact-tool-descriptor',
  Proposal: 'proposal',
  ExportBundle: 'export-bundle',
  Goal: 'goal',
  GoalCreateRequest: 'goal-create-request',
  GoalUpdateRequest: 'goal-update-request',
  GoalRunReport: 'goal-run-report',
  ConnectionPackManifest: 'connection-pack-manifest',
  AuditVerifyResult: 'audit-verify-result',
  WorkspaceFile: 'workspace-file',
};

export function protocolSchemaRef(component: string): { $ref: string } {
  if (!PROTOCOL_SCHEMAS[component]) throw new WiringFault(`unknown protocol schema component "${component}"`);
  return { $ref: `#/components/schemas/${component}` };
}

/**
 * Protocol shapes embedded in the OpenAPI document as components, from the official JSON Schemas
 * in schemas/openwop/ (component name → schema short name).
 */
export const PROTOCOL_SCHEMAS: Record<string, string> = {
  ErrorEnvelope: 'error-envelope',
  RunEvent: 'run-event',
};

export function protocolSchemaRef(component: string): { $ref: string } {
  if (!PROTOCOL_SCHEMAS[component]) throw new Error(`unknown protocol schema component "${component}"`);
  return { $ref: `#/components/schemas/${component}` };
}

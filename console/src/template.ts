/**
 * A `{{path}}` template as the run engine renders a node's config (`Publish release {{inputs.version}}?`),
 * for the places the console shows one the host has not rendered: the run's own definition holds its
 * nodes' configs as written. A path that does not resolve is left as written, so a title never hides a
 * gap; an object or array is written as JSON.
 */
export function renderTemplate(template: string, context: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g, (whole, path: string) => {
    let v: unknown = context;
    for (const part of path.split('.')) {
      if (v === null || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, part)) return whole;
      v = (v as Record<string, unknown>)[part];
    }
    if (v === undefined) return whole;
    return typeof v === 'string' ? v : JSON.stringify(v);
  });
}

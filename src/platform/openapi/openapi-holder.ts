/** Holds the document built once at start from the mounted routes. */
export class OpenApiHolder {
  document: Record<string, unknown> = {};
  serialized = '{}';

  set(doc: Record<string, unknown>): void {
    this.document = doc;
    this.serialized = JSON.stringify(doc);
  }
}

import { v2OpenApiDocument } from './v2-openapi';

/** Holds the documents built once at start from the mounted routes: v1's, and v2's derived from it. */
export class OpenApiHolder {
  document: Record<string, unknown> = {};
  serialized = '{}';
  v2Document: Record<string, unknown> = {};
  v2Serialized = '{}';

  set(doc: Record<string, unknown>): void {
    this.document = doc;
    this.serialized = JSON.stringify(doc);
    this.v2Document = v2OpenApiDocument(doc);
    this.v2Serialized = JSON.stringify(this.v2Document);
  }
}

import { v2OpenApiDocument } from './v2-openapi';

interface Built {
  document: Record<string, unknown>;
  serialized: string;
  v2Document: Record<string, unknown>;
  v2Serialized: string;
}

/**
 * Holds the documents built from the mounted routes: v1's, and v2's derived from it. They are built
 * on first use (the first read of `/v1/openapi.json`, `/openapi.json` or `/docs`), not at start:
 * building them was about half of a boot, which every start paid and most never needed. Built once
 * per process, then served from memory.
 */
export class OpenApiHolder {
  private factory?: () => Record<string, unknown>;
  private built?: Built;

  /** The document, from the routes as mounted when first read. */
  setFactory(factory: () => Record<string, unknown>): void {
    this.factory = factory;
    this.built = undefined;
  }

  set(doc: Record<string, unknown>): void {
    this.setFactory(() => doc);
  }

  private get b(): Built {
    if (!this.built) {
      if (!this.factory) return { document: {}, serialized: '{}', v2Document: {}, v2Serialized: '{}' };
      const document = this.factory();
      const v2Document = v2OpenApiDocument(document);
      this.built = { document, serialized: JSON.stringify(document), v2Document, v2Serialized: JSON.stringify(v2Document) };
    }
    return this.built;
  }

  get document(): Record<string, unknown> {
    return this.b.document;
  }

  get serialized(): string {
    return this.b.serialized;
  }

  get v2Document(): Record<string, unknown> {
    return this.b.v2Document;
  }

  get v2Serialized(): string {
    return this.b.v2Serialized;
  }
}

/** Estate export and import (`/v1/export`, `/v1/import`) through the generated client. */
import { api, call, Schemas, toApiError } from './client';

export type Bundle = Schemas['ExportBundle'];
export type ImportAnswer = Awaited<ReturnType<typeof importBundle>>;
export type ImportPlan = Extract<ImportAnswer, { dryRun: true }>;
export type ImportResult = Extract<ImportAnswer, { dryRun: false }>;

/** The kinds the host can export, from its discovery document (public). */
export async function exportKinds(): Promise<string[]> {
  const res = await fetch('/.well-known/openwop');
  const doc = (await res.json()) as { portability?: { kinds?: string[] } };
  return doc.portability?.kinds ?? [];
}

/**
 * Downloads the export bundle (of `kinds`, or every kind), reading the body in chunks so a large estate
 * shows how far the download has come. Returns the bundle's bytes and the parsed bundle.
 */
export async function exportBundle(kinds: string[], progress: (received: number, total: number | undefined) => void): Promise<{ blob: Blob; bundle: Bundle; bytes: number }> {
  const r = await api.GET('/v1/export', { params: { query: kinds.length ? { kinds: kinds.join(',') } : {} }, parseAs: 'stream' });
  if (!r.response.ok || !r.data) throw toApiError(r.response.status, r.error);
  const length = Number(r.response.headers.get('content-length'));
  const total = Number.isFinite(length) && length > 0 ? length : undefined;
  const reader = r.data.getReader();
  const chunks: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    chunks.push(value);
    n += value.byteLength;
    progress(n, total);
  }
  const blob = new Blob(chunks as BlobPart[], { type: 'application/json' });
  return { blob, bundle: JSON.parse(await blob.text()) as Bundle, bytes: n };
}

/** A dry run (writes nothing, answers the plan) or the import itself. */
export function importBundle(bundle: Bundle, dryRun: boolean) {
  return call(api.POST('/v1/import', { params: { query: { dryRun: dryRun ? 'true' : 'false' } }, body: bundle }));
}

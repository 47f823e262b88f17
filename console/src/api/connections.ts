/** Connections, connection providers and connection packs through the generated client. */
import { api, call, paths } from './client';
import { Page, pageQuery } from './paging';

type Json<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
export type Connection = Json<'/v1/connections', 'get'>['connections'][number];
export type Provider = Json<'/v1/connection-providers', 'get'>['providers'][number];
export type ConnectionPack = Json<'/v1/connection-packs', 'get'>['packs'][number];

export async function listConnections(cursor?: string): Promise<Page<Connection>> {
  const r = await call(api.GET('/v1/connections', { params: { query: pageQuery(cursor) } }));
  return { items: r.connections, nextCursor: r.nextCursor };
}

export async function listProviders(cursor?: string): Promise<Page<Provider>> {
  const r = await call(api.GET('/v1/connection-providers', { params: { query: pageQuery(cursor) } }));
  return { items: r.providers, nextCursor: r.nextCursor };
}

export async function listConnectionPacks(cursor?: string): Promise<Page<ConnectionPack>> {
  const r = await call(api.GET('/v1/connection-packs', { params: { query: pageQuery(cursor) } }));
  return { items: r.packs, nextCursor: r.nextCursor };
}

/** What a credential for the provider will be asked to grant: read first, write as a separate later step. */
export function consentPlan(providerId: string, write: boolean) {
  return call(api.GET('/v1/connection-providers/{providerId}/consent-plan', { params: { path: { providerId }, query: { requested: write ? ['read', 'write'] : ['read'] } } }));
}

/** The credential is write-only: sent once here, never answered back. */
export function createConnection(body: { name: string; provider: string; credential: string }) {
  return call(api.POST('/v1/connections', { body }));
}

export function rotateCredential(id: string, credential: string) {
  return call(api.PUT('/v1/connections/{id}/credential', { params: { path: { id } }, body: { credential } }));
}

/** Resolves true once deleted (the host answers without a body). */
export async function deleteConnection(id: string): Promise<true> {
  await call(api.DELETE('/v1/connections/{id}', { params: { path: { id } } }));
  return true;
}

/** Resolves true once uninstalled. */
export async function uninstallConnectionPack(name: string): Promise<true> {
  await call(api.DELETE('/v1/connection-packs/{name}', { params: { path: { name } } }));
  return true;
}

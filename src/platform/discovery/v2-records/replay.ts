import type { V2FamilyRecord } from './types';

/** The path of the effect-seam manifest (replay.md §The effect-seam manifest; the facet's constant). */
export const EFFECT_SEAMS_MANIFEST = '/host/effect-seams';

/** v1 `replay.modes` as the v2 facet names them (facets/replay.schema.json): a `replay` fork is `fork`. */
const V2_MODE: Record<string, string> = { replay: 'fork', branch: 'branch' };

/**
 * The v2 `replay` record (replay.md, facets/replay.schema.json): `POST /runs/{runId}:fork`,
 * `GET /runs/{runId}:diff` and the effect-seam manifest at `/host/effect-seams`, present while the
 * v1 document advertises replay. Suppression is not a flag at v2: it binds with the family and is
 * witnessed by the manifest.
 */
export const REPLAY_RECORD: V2FamilyRecord = {
  family: 'replay',
  record: (v1) => {
    const r = v1.replay as { supported?: boolean; modes?: unknown[] } | undefined;
    if (!r?.supported) return undefined;
    const modes = (r.modes ?? []).map((m) => V2_MODE[String(m)]).filter((m): m is string => m !== undefined);
    return {
      status: 'experimental',
      since: '2.0',
      until: '2027-06-30',
      witness: 'witnessable-gated',
      modes,
      effectSeamsManifest: EFFECT_SEAMS_MANIFEST,
    };
  },
};

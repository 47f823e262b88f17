/**
 * One v2 capability family's record in the v2 discovery root (spec v2 capabilities.md §3):
 * `{ status, since, until?, witness, ...facets }`, projected from the v1 document the host composes.
 * Each family has its own file under this folder and one entry in `index.ts` (`V2_RECORDS`); the
 * families served at major 2 (`V2_FAMILIES`, which gates their operations before routing) are
 * derived from that list, so a family's operations are never served without its record.
 */

/** What a record needs beyond the v1 document: the origin the host answers at (some records name absolute URLs). */
export interface V2Context {
  origin?: string;
  /**
   * The trust roots of the SAML and SCIM lanes, which the v1 document names only by profile
   * (`auth.profiles`): each configured SAML provider's entityID, and the entityID each SCIM
   * connection is bound to (`samlScimIssuers` in auth.ts).
   */
  identityLanes?: { saml: string[]; scim: string[] };
}

export interface V2FamilyRecord {
  /** The family's key in the v2 root (spec/v2/declaration.json). */
  family: string;
  /** Its record, or undefined when the host does not serve the family in this configuration (the v1 document says). */
  record: (v1: Record<string, unknown>, ctx: V2Context) => Record<string, unknown> | undefined;
}

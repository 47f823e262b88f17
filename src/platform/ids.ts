/** A canonical UUID (any version), case-insensitive: how ids of host rows look on the wire. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

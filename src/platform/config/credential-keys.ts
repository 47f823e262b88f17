/**
 * The format of OPENWOP_CREDENTIAL_KEYS, `id:base64key[,id:base64key]`: checked when the
 * configuration is loaded (before any database is opened) and parsed again by the credential keyring.
 */

export interface KeyringKey {
  id: string;
  key: Buffer;
}

export class KeyringError extends Error {}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Parses a keyring: the first key seals, all open. Error messages name the key id, never key material. */
export function parseKeyring(spec: string): KeyringKey[] {
  const keys: KeyringKey[] = [];
  for (const part of spec.split(',').map((p) => p.trim()).filter(Boolean)) {
    const sep = part.indexOf(':');
    const id = sep > 0 ? part.slice(0, sep) : '';
    if (!KEY_ID.test(id)) throw new KeyringError('OPENWOP_CREDENTIAL_KEYS: each entry is id:base64key with an id of letters, digits, ".", "_" or "-"');
    const b64 = part.slice(sep + 1);
    const key = Buffer.from(b64, 'base64');
    if (key.length !== 32 || key.toString('base64').replace(/=+$/, '') !== b64.replace(/=+$/, '')) {
      throw new KeyringError(`OPENWOP_CREDENTIAL_KEYS: key "${id}" must be 32 bytes in standard base64`);
    }
    if (keys.some((k) => k.id === id)) throw new KeyringError(`OPENWOP_CREDENTIAL_KEYS: key id "${id}" appears twice`);
    keys.push({ id, key });
  }
  return keys;
}

import { ConfigError } from './config-error';

/** A whole-number setting within [min, max], its default when unset or empty; anything else stops the start. */
export function envInt(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = env[name];
  if (v === undefined || v === '') return dflt;
  if (!/^\d+$/.test(v.trim())) throw new ConfigError(`${name} must be a whole number, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

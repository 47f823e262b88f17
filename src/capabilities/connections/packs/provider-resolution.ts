import * as semver from 'semver';
import { InvariantViolation } from '../../../platform/errors/internal-fault';

export type ProviderSource = 'pack' | 'builtin';

export interface ResolutionCandidate {
  version?: string;
}

export type ResolutionDecision =
  | { resolved: true; source: ProviderSource; version?: string }
  | { resolved: false; code: 'connection_provider_unresolved' | 'connection_provider_conflict' };

/**
 * SemVer 2.0.0 §11 precedence (prerelease < release, identifiers compared field by field, build
 * metadata ignored), via the `semver` library. Throws on a version that is not SemVer.
 */
export function compareVersions(a: string, b: string): number {
  const pa = semver.parse(a, { loose: false });
  const pb = semver.parse(b, { loose: false });
  if (!pa || !pb) throw new InvariantViolation(`not a SemVer version: ${!pa ? a : b}`);
  return semver.compare(pa, pb);
}

export function isSemver(v: string): boolean {
  return semver.parse(v, { loose: false }) !== null;
}

/**
 * RFC 0095 clause 6. An installed pack resolves its provider id; when a built-in also defines the id,
 * the pack wins only if its version is >= the built-in's, else the conflict is surfaced (never a
 * silent pick). A built-in without a version is a pure fallback.
 */
export function decideResolution(installed: ResolutionCandidate | undefined, builtin: ResolutionCandidate | undefined): ResolutionDecision {
  if (installed) {
    if (builtin?.version && installed.version && compareVersions(installed.version, builtin.version) < 0) {
      return { resolved: false, code: 'connection_provider_conflict' };
    }
    return { resolved: true, source: 'pack', version: installed.version };
  }
  if (builtin) return { resolved: true, source: 'builtin', version: builtin.version };
  return { resolved: false, code: 'connection_provider_unresolved' };
}

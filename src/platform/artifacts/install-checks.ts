import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { UnprocessableError } from '../errors/domain-error';

/** One reason an artifact cannot be installed: where (a JSON Pointer into the artifact), what (a stable code), why. */
export interface InstallProblem {
  path: string;
  code: string;
  message: string;
}

/** Who installs: what the checks may look at on their behalf (their tool catalog is scoped by these). */
export interface Installer {
  tenant: string;
  workspace?: string;
  principal: string;
  scopes: ReadonlySet<string>;
}

/**
 * A capability's check of artifacts of one registry kind before they are installed (the runs
 * capability checks workflow-chain packs: node types, tools, the DAG, templates). It returns every
 * problem it finds, never only the first.
 */
export interface ArtifactInstallCheck {
  check(content: Record<string, unknown>, installer: Installer, manager?: EntityManager): Promise<InstallProblem[]>;
  /**
   * Loads what `check` reads on connections of its own (not the caller's `manager`), such as the tool
   * catalog of the installer's scope. Install paths that check inside a transaction call it first, outside
   * the transaction: on the embedded engine, whose connections share one session, such a read made inside
   * the transaction would wait behind it.
   */
  prepare?(installer: Installer): Promise<void>;
}

/** The 422 code of an artifact whose content cannot be executed here (the code `POST /v1/runs` uses for a broken chain). */
export const INSTALL_REFUSED_CODE = 'workflow_invalid';

/**
 * The seam between the install paths (a direct pack install, a proposal's activation, a bundle
 * import) and the capabilities that know what makes an artifact installable: the checking
 * capability registers itself here, so the install paths depend on the platform, not on it.
 */
@Injectable()
export class InstallChecks {
  private readonly checks = new Map<string, ArtifactInstallCheck[]>();

  register(kind: string, check: ArtifactInstallCheck): void {
    const list = this.checks.get(kind) ?? [];
    list.push(check);
    this.checks.set(kind, list);
  }

  /** Every problem of `content` as an artifact of registry `kind` installed by `installer` (none: installable). */
  async problems(kind: string, content: Record<string, unknown>, installer: Installer, manager?: EntityManager): Promise<InstallProblem[]> {
    const out: InstallProblem[] = [];
    for (const c of this.checks.get(kind) ?? []) out.push(...(await c.check(content, installer, manager)));
    return out;
  }

  /** Loads, outside any transaction, what the checks of `kind` read on connections of their own (see ArtifactInstallCheck.prepare). */
  async prepare(kind: string, installer: Installer): Promise<void> {
    for (const c of this.checks.get(kind) ?? []) await c.prepare?.(installer);
  }

  /** Throws 422 `workflow_invalid` listing every problem (`details.problems`) unless `content` is installable. */
  async assertInstallable(kind: string, content: Record<string, unknown>, installer: Installer, manager?: EntityManager): Promise<void> {
    const problems = await this.problems(kind, content, installer, manager);
    if (problems.length) throw refusal(kind, problems);
  }
}

/** The 422 of an artifact that cannot be installed, listing every problem. */
export function refusal(kind: string, problems: InstallProblem[]): UnprocessableError {
  const first = problems[0];
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : '';
  return new UnprocessableError(INSTALL_REFUSED_CODE, `The ${kind} cannot be installed: ${first.path || '/'}: ${first.message}${more}. Nothing was installed.`, { kind, problems });
}

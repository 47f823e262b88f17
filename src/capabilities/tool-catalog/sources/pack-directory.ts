import * as fs from 'node:fs';
import * as path from 'node:path';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HealthService } from '../../../platform/health/health.service';
import { nodePackViolations, workflowChainPackViolations } from '../installers/pack-installers';
import { TOOL_CATALOG_SETTINGS, ToolCatalogSettings } from '../tool-catalog.config';

export interface DirectoryPack {
  file: string;
  content: Record<string, unknown>;
}

/**
 * Packs loaded once at start from OPENWOP_CONFIG `tools.packDirectory` (host-wide: every tenant
 * sees them). Each `*.json` file, or `<folder>/pack.json`, is one manifest; `kind:
 * "workflow-chain"` makes it a workflow-chain pack, anything else a node pack. An invalid manifest
 * is reported and skipped; the others load.
 */
@Injectable()
export class PackDirectory implements OnModuleInit {
  private readonly log = new Logger('ToolCatalog');
  nodePacks: DirectoryPack[] = [];
  workflowChainPacks: DirectoryPack[] = [];

  constructor(
    @Inject(TOOL_CATALOG_SETTINGS) private readonly settings: ToolCatalogSettings,
    private readonly health: HealthService,
  ) {}

  onModuleInit(): void {
    const dir = this.settings.packDirectory;
    if (!dir) return;
    const problems: string[] = [];
    let files: string[] = [];
    try {
      files = fs
        .readdirSync(dir, { withFileTypes: true })
        .flatMap((e) => (e.isDirectory() ? [path.join(dir, e.name, 'pack.json')] : e.name.endsWith('.json') ? [path.join(dir, e.name)] : []))
        .filter((f) => fs.existsSync(f))
        .sort();
    } catch (e) {
      problems.push(`cannot read ${dir}: ${(e as Error).message}`);
    }
    for (const file of files) {
      let content: unknown;
      try {
        content = JSON.parse(fs.readFileSync(file, 'utf8'));
      } catch (e) {
        problems.push(`${file}: not JSON (${(e as Error).message})`);
        continue;
      }
      if (!content || typeof content !== 'object' || Array.isArray(content)) {
        problems.push(`${file}: not a JSON object`);
        continue;
      }
      const manifest = content as Record<string, unknown>;
      const chain = manifest.kind === 'workflow-chain';
      const violations = chain ? workflowChainPackViolations(manifest) : nodePackViolations(manifest);
      if (violations.length) {
        problems.push(`${file}: ${violations.slice(0, 3).map((v) => `${v.path || '/'} ${v.message}`).join('; ')}`);
        continue;
      }
      (chain ? this.workflowChainPacks : this.nodePacks).push({ file, content: manifest });
    }
    for (const p of problems) this.log.error({ msg: 'pack in tools.packDirectory skipped', problem: p });
    this.health.report('tool-catalog:pack-directory', problems.length === 0, problems.length ? `${problems.length} pack file(s) skipped: ${problems[0]}` : undefined, {
      loaded: this.nodePacks.length + this.workflowChainPacks.length,
      skipped: problems.length,
    });
    this.log.log({ msg: 'packs loaded from tools.packDirectory', dir, nodePacks: this.nodePacks.length, workflowChainPacks: this.workflowChainPacks.length });
  }
}

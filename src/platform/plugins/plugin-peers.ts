import * as fs from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';

/**
 * The packages a plugin shares with the host rather than loading a copy of its own: the plugin SDK and
 * its peer dependencies (Nest, rxjs, reflect-metadata). A second copy of Nest would break dependency
 * injection and exception matching, and the host's SDK is the host API version plugins are checked against.
 */
export function sharedPackages(): string[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('@openwop-host/plugin-sdk/package.json') as { name: string; peerDependencies?: Record<string, string> };
  return [sdk.name, ...Object.keys(sdk.peerDependencies ?? {})];
}

type ResolveFilename = (request: string, parent: NodeModule | undefined, isMain: boolean, options?: unknown) => string;

const roots: string[] = [];
let shared: string[] = [];
let hooked = false;

const isShared = (request: string) => shared.some((name) => request === name || request.startsWith(`${name}/`));
const within = (file: string | undefined) => Boolean(file && roots.some((root) => file.startsWith(root)));

/**
 * Plugins installed outside the host's checkout (OPENWOP_PLUGINS_DIR, or a path elsewhere) find the
 * shared packages where the host has them: Node's resolution walks up from the plugin's folder and would
 * not reach the host's node_modules (or would reach a copy npm put beside the plugin). A `require` of a
 * shared package (or one of its files) from a module under `dir` is resolved as if the host asked for it;
 * every other request resolves as usual, from the plugin's own folder.
 */
export function shareHostPackagesWith(dir: string): void {
  const root = `${fs.realpathSync(dir)}${path.sep}`;
  if (!roots.includes(root)) roots.push(root);
  if (hooked) return;
  hooked = true;
  shared = sharedPackages();
  const loader = Module as unknown as { _resolveFilename: ResolveFilename };
  const original = loader._resolveFilename;
  const host = module;
  loader._resolveFilename = function resolveFilename(this: unknown, request, parent, isMain, options) {
    if (isShared(request) && within(parent?.filename)) return original.call(this, request, host, false);
    return original.call(this, request, parent, isMain, options);
  };
}

/** Whether a resolved plugin file lies under one of the folders that share the host's packages. */
export function sharesHostPackages(file: string): boolean {
  return within(fs.realpathSync(file));
}

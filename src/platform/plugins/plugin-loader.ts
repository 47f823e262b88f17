import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DynamicModule, Provider, Type } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR, APP_PIPE } from '@nestjs/core';
import { BrandedPlugin, isPlugin, PLUGIN_API_VERSION, PLUGIN_CONTEXT, PluginContext, PluginLogger } from '@openwop-host/plugin-sdk';
import type { Logger } from 'pino';
import * as semver from 'semver';
import { DataSource, EntityManager } from 'typeorm';
import { HOST_CONFIG, type HostConfig } from '../config/host-config';
import type { SchemaRegistry } from '../schemas/schema-registry';
import type { PluginStateStore } from './plugin-state.store';
import { shareHostPackagesWith, sharesHostPackages } from './plugin-peers';
import { PROJECT_ROOT } from '../project-root';
import { withTraceHeaders } from '../tracing/tracing';

export interface LoadedPlugin {
  id: string;
  version: string;
  specifier: string;
  module: DynamicModule;
}

export interface PluginFailure {
  specifier: string;
  id?: string;
  reason: string;
}

export interface PluginLoadResult {
  loaded: LoadedPlugin[];
  failed: PluginFailure[];
}

const GLOBAL_ENHANCERS = new Set<unknown>([APP_GUARD, APP_FILTER, APP_PIPE, APP_INTERCEPTOR]);

export class PluginLoadError extends Error {}

/** A path (relative to `cwd`) or a package name, looked up in the plugins folder first, then from `cwd` and the host. */
function resolveSpecifier(spec: string, cwd: string, pluginsDir?: string): string {
  try {
    if (spec.startsWith('.') || path.isAbsolute(spec)) return require.resolve(path.resolve(cwd, spec));
    return require.resolve(spec, { paths: [...(pluginsDir ? [pluginsDir] : []), cwd, PROJECT_ROOT] });
  } catch {
    throw new PluginLoadError(`cannot find the package or file "${spec}" (is it installed${pluginsDir ? ` in OPENWOP_PLUGINS_DIR ${pluginsDir}` : ''}?)`);
  }
}

/** The folder of the package a file belongs to (its nearest package.json). */
function packageRoot(file: string): string {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) || path.dirname(dir) === dir) return dir;
  }
}

/** A plugin outside the host's folder shares the host's Nest and SDK (plugin-peers.ts). */
function sharePeers(resolved: string): void {
  const real = fs.realpathSync(resolved);
  if (!real.startsWith(`${fs.realpathSync(PROJECT_ROOT)}${path.sep}`) && !sharesHostPackages(real)) shareHostPackagesWith(packageRoot(real));
}

function pluginLogger(base: Logger, id: string): PluginLogger {
  const child = base.child({ plugin: id });
  return {
    debug: (m, f) => child.debug(f ?? {}, m),
    info: (m, f) => child.info(f ?? {}, m),
    warn: (m, f) => child.warn(f ?? {}, m),
    error: (m, f) => child.error(f ?? {}, m),
  };
}

function timedFetch(url: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<Response> {
  const { timeoutMs = 10_000, ...rest } = init;
  const signal = rest.signal ? AbortSignal.any([rest.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
  // The current trace context travels with the request (a tool call's span: the API's spans join the run's trace).
  return fetch(url, withTraceHeaders({ ...rest, signal }));
}

function providersOf(mod: DynamicModule | Type<unknown>): Provider[] {
  if (typeof mod === 'function') return (Reflect.getMetadata('providers', mod) as Provider[] | undefined) ?? [];
  const own = (mod.providers ?? []) as Provider[];
  const fromClass = (Reflect.getMetadata('providers', mod.module) as Provider[] | undefined) ?? [];
  return [...own, ...fromClass];
}

/** A plugin may not weaken the host's pipeline: global guards, filters, pipes and interceptors are refused. */
export function assertNoGlobalEnhancers(mod: DynamicModule | Type<unknown>, id: string, seen = new Set<unknown>()): void {
  if (seen.has(mod)) return;
  seen.add(mod);
  for (const p of providersOf(mod)) {
    if (p && typeof p === 'object' && 'provide' in p && GLOBAL_ENHANCERS.has(p.provide)) {
      throw new PluginLoadError(`plugin "${id}" registers a global ${String(p.provide)}, which plugins may not do`);
    }
  }
  const imports = typeof mod === 'function' ? ((Reflect.getMetadata('imports', mod) as unknown[]) ?? []) : [...(mod.imports ?? []), ...((Reflect.getMetadata('imports', mod.module) as unknown[]) ?? [])];
  for (const i of imports) {
    if (i && (typeof i === 'function' || (typeof i === 'object' && 'module' in (i as object)))) assertNoGlobalEnhancers(i as DynamicModule, id, seen);
  }
}

/**
 * What a plugin may not inject: the raw database (the data source, an entity manager) and the host's
 * configuration. A plugin gets the curated context (`PLUGIN_CONTEXT`: its options, logger, timed
 * fetch, key-value state) and the SDK's extension points, never the platform's internals.
 */
const FORBIDDEN_DEPENDENCIES = new Map<unknown, string>([
  [DataSource, 'the database (DataSource)'],
  [EntityManager, 'the database (EntityManager)'],
  [HOST_CONFIG, "the host's configuration"],
]);

/** The class a provider instantiates (a class, or `useClass`), if any. */
function providerClass(p: Provider): Type<unknown> | undefined {
  if (typeof p === 'function') return p as Type<unknown>;
  if (p && typeof p === 'object' && 'useClass' in p && typeof p.useClass === 'function') return p.useClass as Type<unknown>;
  return undefined;
}

/** The tokens a class's constructor asks for: its declared parameter types, and any `@Inject(token)` overrides. */
function constructorTokens(cls: Type<unknown>): unknown[] {
  const types = [...((Reflect.getMetadata('design:paramtypes', cls) as unknown[] | undefined) ?? [])];
  for (const o of (Reflect.getMetadata('self:paramtypes', cls) as Array<{ index: number; param: unknown }> | undefined) ?? []) types[o.index] = o.param;
  const injects = (Reflect.getMetadata('inject', cls) as unknown[] | undefined) ?? [];
  return [...types, ...injects];
}

/** A plugin's providers (and those of the modules it imports) ask only for what plugins may have. */
export function assertCuratedDependencies(mod: DynamicModule | Type<unknown>, id: string, seen = new Set<unknown>()): void {
  if (seen.has(mod)) return;
  seen.add(mod);
  const providers = providersOf(mod);
  const factories = providers.filter((p): p is Provider & { inject: unknown[] } => Boolean(p && typeof p === 'object' && 'useFactory' in p && Array.isArray((p as { inject?: unknown }).inject)));
  const controllers = typeof mod === 'function' ? ((Reflect.getMetadata('controllers', mod) as Type<unknown>[]) ?? []) : [...(mod.controllers ?? []), ...((Reflect.getMetadata('controllers', mod.module) as Type<unknown>[]) ?? [])];
  const classes = [...providers.map(providerClass).filter((c): c is Type<unknown> => Boolean(c)), ...controllers];
  for (const cls of classes) {
    for (const token of constructorTokens(cls)) {
      const what = FORBIDDEN_DEPENDENCIES.get(token);
      if (what) throw new PluginLoadError(`plugin "${id}": ${cls.name} injects ${what}, which plugins may not use (they get PLUGIN_CONTEXT and the SDK's extension points)`);
    }
  }
  for (const f of factories) {
    for (const token of f.inject) {
      const what = FORBIDDEN_DEPENDENCIES.get(token);
      if (what) throw new PluginLoadError(`plugin "${id}": a factory provider injects ${what}, which plugins may not use`);
    }
  }
  const imports = typeof mod === 'function' ? ((Reflect.getMetadata('imports', mod) as unknown[]) ?? []) : [...(mod.imports ?? []), ...((Reflect.getMetadata('imports', mod.module) as unknown[]) ?? [])];
  for (const i of imports) {
    if (i && (typeof i === 'function' || (typeof i === 'object' && 'module' in (i as object)))) assertCuratedDependencies(i as DynamicModule, id, seen);
  }
}

/**
 * Loads the plugins named in OPENWOP_PLUGINS: resolve the package (from OPENWOP_PLUGINS_DIR first) or
 * path, share the host's Nest and SDK with it when it lies outside the host's folder, check its brand and the
 * host range it supports, validate its options against its own JSON Schema, build its module with
 * curated host services, and refuse global enhancers. A failure is reported and skips that plugin,
 * unless OPENWOP_PLUGINS_STRICT=true.
 */
export function loadPlugins(
  config: Pick<HostConfig, 'plugins' | 'pluginsDir' | 'pluginsStrict' | 'file'>,
  deps: { logger: Logger; schemas: SchemaRegistry; state: PluginStateStore; cwd?: string },
): PluginLoadResult {
  const loaded: LoadedPlugin[] = [];
  const failed: PluginFailure[] = [];
  const ids = new Set<string>();
  if (config.pluginsDir && config.plugins.length) shareHostPackagesWith(config.pluginsDir);
  // A plugin installed in the folder is loaded only when named: installing code never enables it.
  if (config.pluginsDir && !config.plugins.length) deps.logger.warn({ msg: 'OPENWOP_PLUGINS_DIR is set but OPENWOP_PLUGINS names no plugin: none is loaded', pluginsDir: config.pluginsDir });
  for (const specifier of config.plugins) {
    let id: string | undefined;
    try {
      const resolved = resolveSpecifier(specifier, deps.cwd ?? process.cwd(), config.pluginsDir);
      sharePeers(resolved);
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const exported = require(resolved) as Record<string, unknown>;
      const candidate = [exported.default, exported.plugin, exported].find(isPlugin) as BrandedPlugin | undefined;
      if (!candidate) throw new PluginLoadError('its main export is not a plugin made with definePlugin()');
      id = candidate.id;
      if (!/^[a-z0-9][a-z0-9._-]*$/.test(id)) throw new PluginLoadError(`invalid plugin id "${id}"`);
      if (ids.has(id)) throw new PluginLoadError(`plugin id "${id}" is loaded twice`);
      if (!semver.validRange(candidate.hostRange)) throw new PluginLoadError(`hostRange "${candidate.hostRange}" is not a SemVer range`);
      if (!semver.satisfies(PLUGIN_API_VERSION, candidate.hostRange)) {
        throw new PluginLoadError(`it supports host API ${candidate.hostRange}, this host provides ${PLUGIN_API_VERSION}`);
      }
      const options = (config.file.plugins?.[id] ?? {}) as Record<string, unknown>;
      if (candidate.configSchema) {
        const errors = deps.schemas.validateWith(candidate.configSchema, options);
        if (errors.length) throw new PluginLoadError(`its options are invalid: ${errors.map((e) => `${e.path || '/'} ${e.message}`).join('; ')}`);
      }
      const ctx: PluginContext = {
        id,
        config: options,
        logger: pluginLogger(deps.logger, id),
        http: { fetch: timedFetch },
        kv: deps.state.forPlugin(id),
      };
      const built = typeof candidate.module === 'function' && !isModuleClass(candidate.module)
        ? (candidate.module as (c: PluginContext) => Type<unknown> | DynamicModule)(ctx)
        : (candidate.module as Type<unknown> | DynamicModule);
      assertNoGlobalEnhancers(built, id);
      assertCuratedDependencies(built, id);
      const base: DynamicModule = typeof built === 'function' ? { module: built } : built;
      const module: DynamicModule = { ...base, providers: [...(base.providers ?? []), { provide: PLUGIN_CONTEXT, useValue: ctx }] };
      ids.add(id);
      loaded.push({ id, version: candidate.version, specifier, module });
      deps.logger.info({ msg: 'plugin loaded', plugin: id, version: candidate.version, specifier });
    } catch (e) {
      const reason = (e as Error).message;
      failed.push({ specifier, id, reason });
      deps.logger.error({ msg: 'plugin failed to load', plugin: id ?? specifier, reason });
      if (config.pluginsStrict) throw new PluginLoadError(`plugin ${id ?? specifier} failed to load: ${reason}`);
    }
  }
  return { loaded, failed };
}

function isModuleClass(fn: unknown): boolean {
  return typeof fn === 'function' && (Reflect.getMetadataKeys(fn as object).some((k) => ['imports', 'providers', 'controllers', 'exports'].includes(String(k))) || /^class\s/.test(Function.prototype.toString.call(fn)));
}

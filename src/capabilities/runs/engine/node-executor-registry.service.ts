import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { collectExtensions } from '../../../platform/plugins/extension-registry';
import { NODE_TYPE_ID_PATTERN, NodeExecutor, NodeExecutorMeta, NodeExecutorProvider, ToolReplayPolicy } from '@openwop-host/plugin-sdk';

export interface RegisteredExecutor {
  typeId: string;
  provider: NodeExecutorProvider;
  replayPolicy: ToolReplayPolicy;
}

/** Aliases of built-in type ids (the learned-chain synthesizer writes `core.tool.call`). */
const ALIASES: Record<string, string> = { 'core.tool.call': 'core.tool' };

/**
 * The node executors of the host and its plugins, found by their `@NodeExecutor` decorator. Two
 * executors for one typeId stop the start (the extension registry's one duplicate policy); an
 * executor without execute() or with an invalid typeId is left out and logged.
 */
@Injectable()
export class NodeExecutorRegistry implements OnApplicationBootstrap {
  private readonly log = new Logger('runs.executors');
  private readonly byType = new Map<string, RegisteredExecutor>();

  constructor(private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    const found = collectExtensions<NodeExecutorMeta, NodeExecutorProvider>(this.discovery, {
      name: 'node executor',
      metadataKey: NodeExecutor.key,
      key: (meta) => meta.typeId,
      validate: (meta, provider) =>
        typeof provider.execute !== 'function' || typeof meta.typeId !== 'string' || !NODE_TYPE_ID_PATTERN.test(meta.typeId) ? 'node executor without execute() or with an invalid typeId' : undefined,
      invalid: 'skip',
      onSkip: (problem, c) => this.log.error({ msg: `${problem}; ignored`, typeId: c.meta.typeId }),
    });
    for (const { meta, provider } of found) this.byType.set(meta.typeId, { typeId: meta.typeId, provider, replayPolicy: meta.replayPolicy ?? 'non-deterministic' });
  }

  get(typeId: string): RegisteredExecutor | undefined {
    return this.byType.get(ALIASES[typeId] ?? typeId);
  }

  typeIds(): string[] {
    return [...this.byType.keys()].sort();
  }
}

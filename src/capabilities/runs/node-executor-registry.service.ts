import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { extensionMetadata, NODE_TYPE_ID_PATTERN, NodeExecutor, NodeExecutorProvider, ToolReplayPolicy } from '@openwop-host/plugin-sdk';

export interface RegisteredExecutor {
  typeId: string;
  provider: NodeExecutorProvider;
  replayPolicy: ToolReplayPolicy;
}

/** Aliases of built-in type ids (the learned-chain synthesizer writes `core.tool.call`). */
const ALIASES: Record<string, string> = { 'core.tool.call': 'core.tool' };

/**
 * The node executors of the host and its plugins, found by their `@NodeExecutor` decorator. Two
 * executors for one typeId are refused loudly: the first registered (built-ins come first) wins.
 */
@Injectable()
export class NodeExecutorRegistry implements OnApplicationBootstrap {
  private readonly log = new Logger('runs.executors');
  private readonly byType = new Map<string, RegisteredExecutor>();

  constructor(private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      const meta = extensionMetadata(NodeExecutor, wrapper.metatype ?? undefined);
      if (!meta || !wrapper.instance) continue;
      const provider = wrapper.instance as NodeExecutorProvider;
      if (typeof provider.execute !== 'function' || typeof meta.typeId !== 'string' || !NODE_TYPE_ID_PATTERN.test(meta.typeId)) {
        this.log.error({ msg: 'node executor without execute() or with an invalid typeId; ignored', typeId: meta.typeId });
        continue;
      }
      if (this.byType.has(meta.typeId)) {
        this.log.error({ msg: 'two node executors for one typeId; the first is kept', typeId: meta.typeId });
        continue;
      }
      this.byType.set(meta.typeId, { typeId: meta.typeId, provider, replayPolicy: meta.replayPolicy ?? 'non-deterministic' });
    }
  }

  get(typeId: string): RegisteredExecutor | undefined {
    return this.byType.get(ALIASES[typeId] ?? typeId);
  }

  typeIds(): string[] {
    return [...this.byType.keys()].sort();
  }
}

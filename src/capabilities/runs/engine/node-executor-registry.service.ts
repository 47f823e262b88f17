import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { collectExtensions } from '../../../platform/plugins/extension-registry';
import { NODE_TYPE_ID_PATTERN, NodeExecutionContext, NodeExecutor, NodeExecutorMeta, NodeExecutorProvider, ToolReplayPolicy } from '@openwop-host/plugin-sdk';
import type { DagNode } from '../workflow-definition';
import { DeadLetterSink, withRetries } from '../dead-letters/node-retry';
import { NodeHttpSource, withHttp } from './node-http-proxy';

export interface RegisteredExecutor {
  typeId: string;
  provider: NodeExecutorProvider;
  replayPolicy: ToolReplayPolicy;
}

/** Aliases of built-in type ids (the learned-chain synthesizer writes `core.tool.call`). */
const ALIASES: Record<string, string> = { 'core.tool.call': 'core.tool', 'core.control.subWorkflow': 'core.subWorkflow' };

/**
 * Side-effecting node types that may run again after their replica stopped mid-way, because a second
 * execution finds the first one's effect instead of repeating it: `core.subWorkflow` finds the child
 * run it started (by parent run and node) and waits on it again.
 */
const RESUMABLE = new Set(['core.subWorkflow']);

/** Whether a node of `typeId` left in flight is executed again (not failed with `node_interrupted`). */
export function resumesInFlight(typeId: string): boolean {
  return RESUMABLE.has(ALIASES[typeId] ?? typeId);
}

/**
 * The node executors of the host and its plugins, found by their `@NodeExecutor` decorator. Two
 * executors for one typeId stop the start (the extension registry's one duplicate policy); an
 * executor without execute() or with an invalid typeId is left out and logged.
 */
@Injectable()
export class NodeExecutorRegistry implements OnApplicationBootstrap {
  private readonly log = new Logger('runs.executors');
  private readonly byType = new Map<string, RegisteredExecutor>();
  /** Where a node that exhausted its `config.retry` policy is recorded (the dead-letter sink registers itself). */
  private deadLetters?: DeadLetterSink;
  /** `ctx.http` of every executor (node-http.ts registers itself). */
  private http?: NodeHttpSource;

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
    // Every executor honours a node's RFC 0009 `config.retry` policy (dead-letters/node-retry.ts).
    const sink: DeadLetterSink = { record: (ctx, letter) => this.deadLetters?.record(ctx, letter) ?? Promise.resolve() };
    for (const { meta, provider } of found) this.byType.set(meta.typeId, { typeId: meta.typeId, provider: withRetries(withHttp(provider, () => this.http), sink), replayPolicy: meta.replayPolicy ?? 'non-deterministic' });
  }

  useHttp(binder: NodeHttpSource): void {
    this.http = binder;
  }

  /** The RFC 0053 sink retry-exhausted nodes are recorded in. */
  useDeadLetterSink(sink: DeadLetterSink): void {
    this.deadLetters = sink;
  }

  get(typeId: string): RegisteredExecutor | undefined {
    return this.byType.get(ALIASES[typeId] ?? typeId);
  }

  typeIds(): string[] {
    return [...this.byType.keys()].sort();
  }
}

/** A node's replay policy: its executor's for its config (core.tool: the tool's), `non-deterministic` when nothing serves it. */
export async function nodeReplayPolicy(executors: Pick<NodeExecutorRegistry, 'get'>, n: DagNode, principal: NodeExecutionContext['principal']): Promise<ToolReplayPolicy> {
  const ex = executors.get(n.typeId);
  if (!ex) return 'non-deterministic';
  if (ex.provider.replayPolicyOf) return ex.provider.replayPolicyOf(n.config, principal);
  return ex.replayPolicy;
}

import * as fs from 'node:fs';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import {
  PLUGIN_CONTEXT,
  PluginContext,
  ToolCallResult,
  ToolDescriptor,
  ToolInvocationContext,
  ToolListingContext,
  ToolSession,
  ToolSource,
  ToolSourceProvider,
} from '@openwop-host/plugin-sdk';
import { OpenApiDocumentOptions, OpenApiToolsOptions } from './options';
import { OperationBinding, projectDocument, buildRequest } from './openapi-projection';

interface LoadedDocument {
  options: OpenApiDocumentOptions;
  baseUrl?: string;
  tools: Array<{ descriptor: ToolDescriptor; binding: OperationBinding }>;
}

/**
 * A third-party tool source: the operations of the configured OpenAPI documents, as
 * `host-extension` tools, invocable over HTTP through the host's timed HTTP client.
 */
@Injectable()
@ToolSource({ source: 'host-extension', name: 'openwop.openapi-tools' })
export class OpenApiToolSource implements ToolSourceProvider, OnModuleInit {
  private documents: LoadedDocument[] = [];

  constructor(@Inject(PLUGIN_CONTEXT) private readonly ctx: PluginContext<OpenApiToolsOptions>) {}

  onModuleInit(): void {
    const { vendor, documents } = this.ctx.config;
    this.documents = [];
    for (const options of documents) {
      try {
        const doc = options.document ?? (JSON.parse(fs.readFileSync(options.path as string, 'utf8')) as Record<string, unknown>);
        const servers = Array.isArray(doc.servers) ? (doc.servers as Array<{ url?: unknown }>) : [];
        const baseUrl = options.baseUrl ?? (typeof servers[0]?.url === 'string' ? servers[0].url : undefined);
        const tools = projectDocument(vendor, options, doc);
        this.documents.push({ options, baseUrl, tools });
        this.ctx.logger.info('OpenAPI document projected', { document: options.id, tools: tools.length });
      } catch (e) {
        // One unreadable document loses only its own tools.
        this.ctx.logger.error('OpenAPI document skipped', { document: options.id, reason: (e as Error).message });
      }
    }
  }

  async listTools(ctx: ToolListingContext): Promise<ToolDescriptor[]> {
    return this.visible(ctx.tenant).flatMap((d) => d.tools.map((t) => t.descriptor));
  }

  projects(): boolean {
    return this.documents.some((d) => d.tools.length > 0);
  }

  async openSession(toolId: string, inv: ToolInvocationContext): Promise<ToolSession> {
    const doc = this.visible(inv.tenant).find((d) => d.tools.some((t) => t.binding.toolId === toolId));
    const tool = doc?.tools.find((t) => t.binding.toolId === toolId);
    if (!doc || !tool) throw new Error(`unknown tool ${toolId}`);
    if (!doc.baseUrl) throw new Error(`document ${doc.options.id} has no base URL`);
    const baseUrl = doc.baseUrl;
    const http = this.ctx.http;
    const timeoutMs = this.ctx.config.timeoutMs ?? 10_000;
    return {
      async call(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolCallResult> {
        let req: ReturnType<typeof buildRequest>;
        try {
          req = buildRequest(baseUrl, tool.binding, args, doc.options.headers);
        } catch (e) {
          return { status: 'error', error: { code: 'invalid_arguments', message: (e as Error).message } };
        }
        try {
          const res = await http.fetch(req.url, { ...req.init, signal, timeoutMs });
          const text = await res.text();
          let content: unknown = text;
          try {
            content = text ? JSON.parse(text) : undefined;
          } catch {
            // not JSON: keep the text
          }
          if (!res.ok) return { status: 'error', content, error: { code: `http_${res.status}`, message: `The API answered ${res.status}.` } };
          return { status: 'ok', content };
        } catch (e) {
          return { status: 'error', error: { code: 'http_failed', message: (e as Error).message } };
        }
      },
      async close(): Promise<void> {},
    };
  }

  private visible(tenant: string): LoadedDocument[] {
    return this.documents.filter((d) => !d.options.tenants || d.options.tenants.includes(tenant));
  }
}

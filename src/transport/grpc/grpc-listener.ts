import * as net from 'node:net';
import * as os from 'node:os';
import type * as grpc from '@grpc/grpc-js';
import type { ServiceDefinition } from '@grpc/proto-loader';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { HealthImplementation, ServingStatus } from 'grpc-health-check';
import { DataSource } from 'typeorm';
import { HOST_CONFIG, HostConfig } from '../../platform/config/host-config';
import { checkReadiness } from '../../platform/health/readiness';
import { ENGINE_SERVICE, loadEnginePackageDefinition } from './engine-proto';
import { EngineServiceImplementation } from './engine-service';
import type { GrpcTlsMode } from '../../platform/config/grpc-settings';
import { WiringFault } from '../../platform/errors/internal-fault';

/** The `grpc` block of the discovery document (capabilities.schema.json `grpc`). */
export interface GrpcAdvertisement {
  supported: true;
  endpoint: string;
  service: typeof ENGINE_SERVICE;
  tls: GrpcTlsMode;
}

/** The first byte of a TLS connection (a handshake record); an HTTP/2 cleartext preface starts with "P". */
const TLS_HANDSHAKE = 0x16;
/** How long a new connection may stay silent before its first byte says whether it speaks TLS. */
const SNIFF_TIMEOUT_MS = 10_000;
/** How often the health service re-reads the host's readiness. */
const HEALTH_INTERVAL_MS = 5_000;

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '' || host === '[::]';
}

/**
 * The gRPC listener of the host process: openwop.v1.Engine, grpc.health.v1.Health (SERVING while
 * the host is ready, as `/readyz` decides) and, when configured, server reflection, on one TCP port.
 *
 * The port is a plain `net` server whose connections are handed to grpc-js connection injectors: a
 * TLS one, a cleartext one, or (TLS `optional`) whichever the connection's first byte asks for, so
 * all three TLS modes share one code path and each client keeps its own address (the rate limits
 * per address see it). `start()` is called by `serve` after the HTTP port listens; the stop runs
 * with the application's shutdown, beside the HTTP server's: the port closes, health turns
 * NOT_SERVING, event streams end with UNAVAILABLE (clients resume from their last sequence) and
 * unary calls get OPENWOP_GRPC_SHUTDOWN_GRACE_MS to finish.
 */
@Injectable()
export class GrpcListener implements BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly log = new Logger('grpc');
  private server?: grpc.Server;
  private listener?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private health?: HealthImplementation;
  private healthTimer?: NodeJS.Timeout;
  private bound?: { host: string; port: number };
  private live = false;
  private stopping?: Promise<void>;

  constructor(
    private readonly engine: EngineServiceImplementation,
    private readonly ds: DataSource,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  /** The address the listener is bound to, while it is live. */
  address(): { host: string; port: number } | undefined {
    return this.live ? this.bound : undefined;
  }

  /** What discovery advertises: present only while the listener is live. */
  advertisement(): GrpcAdvertisement | undefined {
    if (!this.live || !this.bound) return undefined;
    return { supported: true, endpoint: this.endpoint(), service: ENGINE_SERVICE, tls: this.config.grpc.tls };
  }

  /** Binds the port and starts serving. Throws with the socket error's code (EADDRINUSE, EACCES) when it cannot listen. */
  async start(): Promise<{ host: string; port: number; endpoint: string }> {
    if (this.server) throw new WiringFault('the gRPC listener was already started');
    const cfg = this.config.grpc;
    // grpc-js, its health and reflection services and the proto are loaded here, when the port opens:
    // a host whose gRPC port is off never loads them.
    const grpc = require('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
    const { HealthImplementation } = require('grpc-health-check') as typeof import('grpc-health-check');
    const definition = loadEnginePackageDefinition();
    const server = new grpc.Server({
      // The REST body limit is the request message limit: a bigger message is RESOURCE_EXHAUSTED.
      'grpc.max_receive_message_length': this.config.maxRequestBodyBytes,
    });
    const engine = definition[ENGINE_SERVICE] as ServiceDefinition;
    server.addService(this.engine.definition(engine), this.engine.implementation(engine));
    const health = new HealthImplementation({ '': 'NOT_SERVING', [ENGINE_SERVICE]: 'NOT_SERVING' });
    health.addToServer(server);
    if (cfg.reflection) new (require('@grpc/reflection') as typeof import('@grpc/reflection')).ReflectionService(definition).addToServer(server);

    const secure = cfg.tlsFiles ? server.createConnectionInjector(grpc.ServerCredentials.createSsl(null, [{ cert_chain: cfg.tlsFiles.cert, private_key: cfg.tlsFiles.key }], false)) : undefined;
    const plain = cfg.tls === 'required' ? undefined : server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    const route = (socket: net.Socket) => {
      if (cfg.tls === 'required') return secure!.injectConnection(socket);
      if (cfg.tls === 'disabled') return plain!.injectConnection(socket);
      // optional: the first byte decides; it is put back for the server that takes the connection.
      const timer = setTimeout(() => socket.destroy(), SNIFF_TIMEOUT_MS);
      socket.once('data', (chunk: Buffer) => {
        clearTimeout(timer);
        socket.pause();
        socket.unshift(chunk);
        (chunk[0] === TLS_HANDSHAKE ? secure! : plain!).injectConnection(socket);
      });
    };

    const listener = net.createServer({ noDelay: true }, (socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      socket.on('error', () => socket.destroy());
      route(socket);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject);
        listener.listen({ host: cfg.host, port: cfg.port }, () => {
          listener.removeListener('error', reject);
          resolve();
        });
      });
    } catch (e) {
      server.forceShutdown();
      throw e;
    }
    listener.on('error', (e) => this.log.error({ msg: 'gRPC listener error', err: e }));
    const addr = listener.address() as net.AddressInfo;
    this.server = server;
    this.listener = listener;
    this.health = health;
    this.bound = { host: cfg.host, port: addr.port };
    await this.refreshHealth();
    this.healthTimer = setInterval(() => void this.refreshHealth(), HEALTH_INTERVAL_MS);
    this.healthTimer.unref();
    this.live = true;
    return { ...this.bound, endpoint: this.endpoint() };
  }

  /** Stops serving (idempotent); resolves once every call and connection is gone. */
  stop(): Promise<void> {
    if (!this.server) return Promise.resolve();
    return (this.stopping ??= this.shutdown(this.server));
  }

  beforeApplicationShutdown(): void {
    // Begun here, so the gRPC port drains while the HTTP server closes; awaited below.
    void this.stop();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  private async shutdown(server: grpc.Server): Promise<void> {
    this.live = false;
    if (this.healthTimer) clearInterval(this.healthTimer);
    this.setHealth('NOT_SERVING');
    // No new connections; the callback fires only once every open one has ended (below).
    const closed = new Promise<void>((resolve) => (this.listener ? this.listener.close(() => resolve()) : resolve()));
    this.engine.stopStreams();
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, this.config.grpc.shutdownGraceMs);
      force.unref();
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await closed;
  }

  private async refreshHealth(): Promise<void> {
    if (this.stopping) return;
    const { ready } = await checkReadiness(this.ds);
    if (!this.stopping) this.setHealth(ready ? 'SERVING' : 'NOT_SERVING');
  }

  private setHealth(status: ServingStatus): void {
    this.health?.setStatus('', status);
    this.health?.setStatus(ENGINE_SERVICE, status);
  }

  private endpoint(): string {
    const cfg = this.config.grpc;
    if (cfg.endpoint) return cfg.endpoint;
    const scheme = cfg.tls === 'disabled' ? 'grpc' : 'grpcs';
    const host = isWildcard(cfg.host) ? os.hostname() : cfg.host;
    return `${scheme}://${net.isIPv6(host) ? `[${host}]` : host}:${this.bound!.port}`;
  }
}

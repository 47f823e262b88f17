import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { HOST_CONFIG, HostConfig } from '../config/host-config';
import { DatabaseNotifications } from '../database/database-notifications';
import { ApiKeyService, KEY_REVOKED_CHANNEL } from './api-key.service';

/**
 * Carries a key revocation to this replica's verification cache, whoever revoked it (another
 * replica, the CLI):
 *
 * - **notifications**: the process's one LISTEN connection (DatabaseNotifications) listens on the
 *   revocation channel too, on which every revoke notifies the key's lookup id in its own
 *   transaction; the cache drops the key the moment the revocation commits, and cached keys are
 *   otherwise trusted for ApiKeyService.CACHE_MS. Trusted only while that connection is live (its
 *   probe notification made the round trip), so a database that accepts LISTEN but never delivers
 *   (the embedded engine's socket server hands a notification to the connection that sent it, not to
 *   the listener) is not trusted blindly.
 * - **recheck** otherwise (the embedded engine; a server while the listener is down): a cached key is
 *   read again once it is older than `OPENWOP_KEY_RECHECK_MS`, so a revocation is seen within that
 *   interval, at the cost of at most one indexed read per key and interval, only for keys in use
 *   (nothing runs in the background).
 */
@Injectable()
export class KeyRevocationWatcher implements OnModuleInit {
  private live = false;

  constructor(
    private readonly notifications: DatabaseNotifications,
    private readonly keys: ApiKeyService,
    @Inject(HOST_CONFIG) private readonly config: HostConfig,
  ) {}

  /** `notify` while revocations arrive as notifications, else `recheck`. */
  get mode(): 'notify' | 'recheck' {
    return this.live ? 'notify' : 'recheck';
  }

  onModuleInit(): void {
    this.setLive(false);
    // Subscribed before the listener starts (at bootstrap): its first LISTEN includes the channel.
    this.notifications.subscribe(KEY_REVOKED_CHANNEL, (lookupId) => {
      if (lookupId) this.keys.forget(lookupId);
    });
    this.notifications.watchLive((live) => {
      this.setLive(live);
      // Anything revoked before the listener was up (or while it was down) was not announced to it.
      if (live) this.keys.forgetAll();
    });
  }

  /** Notifications live: cached keys last the cache's full expiry; else they are re-read after the recheck interval. */
  private setLive(live: boolean): void {
    this.live = live;
    this.keys.cacheMs = live ? ApiKeyService.CACHE_MS : Math.min(ApiKeyService.CACHE_MS, this.config.keyRecheckMs);
  }
}

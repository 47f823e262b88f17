import type { PluginKeyValueStore } from '@openwop-host/plugin-sdk';
import type { DataSource } from 'typeorm';
import { WiringFault } from '../errors/internal-fault';

/** Backs every plugin's key-value store with the plugin_state table (bound once the database is open). */
export class PluginStateStore {
  private ds?: DataSource;

  bind(ds: DataSource): void {
    this.ds = ds;
  }

  private db(): DataSource {
    if (!this.ds) throw new WiringFault('the plugin store is used before the database is open');
    return this.ds;
  }

  forPlugin(pluginId: string): PluginKeyValueStore {
    return {
      get: async <T>(tenant: string, key: string) => {
        const rows = (await this.db().query('SELECT "value" FROM "plugin_state" WHERE "tenant" = $1 AND "plugin_id" = $2 AND "key" = $3', [tenant, pluginId, key])) as Array<{ value: T }>;
        return rows[0]?.value;
      },
      set: async (tenant, key, value) => {
        await this.db().query(
          `INSERT INTO "plugin_state" ("tenant", "plugin_id", "key", "value") VALUES ($1, $2, $3, $4::jsonb)
           ON CONFLICT ("tenant", "plugin_id", "key") DO UPDATE SET "value" = EXCLUDED."value", "updated_at" = now()`,
          [tenant, pluginId, key, JSON.stringify(value ?? null)],
        );
      },
      delete: async (tenant, key) => {
        await this.db().query('DELETE FROM "plugin_state" WHERE "tenant" = $1 AND "plugin_id" = $2 AND "key" = $3', [tenant, pluginId, key]);
      },
    };
  }
}

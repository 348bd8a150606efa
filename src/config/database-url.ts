/** Which database URL each process connects with, and the message when it has none. */
import { ConfigError } from './errors';
import type { Config } from './types';

/** The processes that connect to PostgreSQL, each as its own role. */
export type DatabaseRole = 'worker' | 'relay' | 'migrate';

const URL_OF: Record<DatabaseRole, { url: (config: Config) => string | undefined; unset: string }> = {
  worker: {
    url: (config) => config.databaseUrl,
    unset:
      'DATABASE_URL=(unset): expected the worker connection, e.g. postgres://expiry_reminder_worker:password@127.0.0.1:5432/profile',
  },
  relay: {
    url: (config) => config.relayDatabaseUrl,
    unset:
      'RELAY_DATABASE_URL (or DATABASE_URL)=(unset): expected the relay connection, e.g. postgres://outbox_relay:password@127.0.0.1:5432/profile',
  },
  migrate: {
    url: (config) => config.migrationDatabaseUrl,
    unset:
      'MIGRATION_DATABASE_URL (or DATABASE_URL)=(unset): expected the owner connection, e.g. postgres://postgres:password@127.0.0.1:5432/profile',
  },
};

/** The database URL `role` connects with, or a ConfigError saying which variable to set. */
export function requireDatabaseUrl(config: Config, role: DatabaseRole): string {
  const url = URL_OF[role].url(config);
  if (!url) throw new ConfigError([URL_OF[role].unset]);
  return url;
}

/**
 * The configuration files the production profile runs and docker-compose.yml mounts: one list, which the
 * stack's modules take their paths from and `scripts/check-compose.sh` reads (compose must mount exactly
 * these), so what compose would run is what the profile ran.
 */
import path from 'node:path';

/**
 * Repository-relative paths, by purpose. A plain literal on purpose: `scripts/check-compose.sh` reads the
 * `'ops/…'` strings of this object without running TypeScript.
 */
export const PRODUCTION_CONFIG_FILES = {
  makeCerts: 'ops/tls/make-certs.sh',
  postgresConf: 'ops/postgres/postgresql.conf',
  postgresHba: 'ops/postgres/pg_hba.conf',
  /** Temporal's own cluster: the same server settings, its own roles. */
  temporalPostgresHba: 'ops/temporal-postgres/pg_hba.conf',
  temporalConfig: 'ops/temporal/config.yaml',
  temporalDynamicConfig: 'ops/temporal/dynamicconfig.yaml',
  /** Read by the server from the folder of its config.yaml. */
  temporalIdentities: 'ops/temporal/identities.yaml',
  temporalUiConfig: 'ops/temporal-ui/config.yaml',
  kafkaProperties: 'ops/kafka/production.properties',
  kafkaAcls: 'ops/kafka/acls.sh',
  kafkaAdminClient: 'ops/kafka/admin-client.properties',
} as const;

const REPOSITORY = path.resolve(__dirname, '..', '..');

/** The absolute path of one of {@link PRODUCTION_CONFIG_FILES}. */
export function productionFile(purpose: keyof typeof PRODUCTION_CONFIG_FILES): string {
  return path.join(REPOSITORY, PRODUCTION_CONFIG_FILES[purpose]);
}

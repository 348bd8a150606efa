/**
 * The Temporal connection profile, read the way the `temporal` CLI reads it (`@temporalio/envconfig`): a
 * profile of `temporal.toml`, overridden by the standard `TEMPORAL_*` variables. This job's earlier TLS
 * variable names stay as aliases of the standard ones.
 */
import fs from 'node:fs';
import { loadClientConfigProfile, type ClientConfigProfile } from '@temporalio/envconfig';
import { errorOf } from '../domain/failures';

/** This job's names (documented since its first release) and the standard names they stand for. */
const TEMPORAL_ENV_ALIASES = {
  TEMPORAL_TLS_CERT_PATH: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
  TEMPORAL_TLS_KEY_PATH: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
  TEMPORAL_TLS_CA_PATH: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
} as const;

/** Variables envconfig needs besides `TEMPORAL_*`: where the default `temporal.toml` lives. */
const CONFIG_DIR_VARIABLES = ['HOME', 'XDG_CONFIG_HOME', 'APPDATA'];

export interface TemporalProfile {
  /** The resolved profile: file values overridden by the environment. Address and namespace may be unset. */
  profile: ClientConfigProfile;
  /** Where file values came from, for messages: `profile "default" of /etc/temporal/temporal.toml`. */
  source: string;
}

/**
 * Reads the Temporal connection profile from `env`: `TEMPORAL_CONFIG_FILE` (or the CLI's default file, when it
 * exists), `TEMPORAL_PROFILE`, and the standard variables with their aliases resolved.
 * @returns the profile, or the problems to report, each naming the variable and what is expected.
 */
export function loadTemporalProfile(env: NodeJS.ProcessEnv): TemporalProfile | { problems: string[] } {
  const problems: string[] = [];
  const given: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value.trim() === '') continue;
    if (name.startsWith('TEMPORAL_') || CONFIG_DIR_VARIABLES.includes(name)) given[name] = value;
  }
  for (const [alias, standard] of Object.entries(TEMPORAL_ENV_ALIASES)) {
    const value = given[alias];
    if (value === undefined) continue;
    if (given[standard] !== undefined && given[standard] !== value) {
      problems.push(`${alias} and ${standard}: two names of one setting with different values; keep one`);
    }
    given[standard] ??= value;
    delete given[alias];
  }
  const file = given.TEMPORAL_CONFIG_FILE;
  // envconfig treats a missing file as no file; a path an operator typed must exist.
  if (file !== undefined && !fs.existsSync(file)) {
    problems.push(`TEMPORAL_CONFIG_FILE=${JSON.stringify(file)}: no such file (expected a temporal.toml)`);
  }
  if (problems.length > 0) return { problems };
  let profile: ClientConfigProfile;
  try {
    profile = loadClientConfigProfile({ overrideEnvVars: given, configFileStrict: true });
  } catch (err) {
    const where = file ? `TEMPORAL_CONFIG_FILE=${JSON.stringify(file)}` : 'temporal.toml';
    const message = errorOf(err).message;
    return {
      problems: [
        /Profile '.*' not found/.test(message)
          ? `TEMPORAL_PROFILE=${JSON.stringify(given.TEMPORAL_PROFILE)}: no such profile in ${where}`
          : `${where}: ${message}`,
      ],
    };
  }
  const cert = profile.tls?.clientCert;
  const key = profile.tls?.clientKey;
  if (Boolean(cert) !== Boolean(key)) {
    problems.push(
      'TEMPORAL_TLS_CLIENT_CERT_PATH (alias TEMPORAL_TLS_CERT_PATH) and TEMPORAL_TLS_CLIENT_KEY_PATH (alias ' +
        'TEMPORAL_TLS_KEY_PATH): expected both (mutual TLS) or neither',
    );
  }
  if (problems.length > 0) return { problems };
  const profileName = given.TEMPORAL_PROFILE ?? 'default';
  return { profile, source: `profile "${profileName}" of ${file ?? "the temporal CLI's temporal.toml"}` };
}

/**
 * The one way an entry point (worker, relay, migrate, client) ends: a readable message on stderr and an
 * exit code that says what kind of failure it was, so a supervisor or a script can tell a bad
 * configuration (fix the environment) from a missing dependency (wait or migrate) from a crash.
 */
import { ConfigError, redactUrl } from './config';

/** Exit codes of the entry points (sysexits.h names where one fits). */
export const EXIT_CODES = {
  /** Finished normally. */
  ok: 0,
  /** Anything unexpected; the message carries the stack. */
  failure: 1,
  /** A dependency is not in the state this process needs, e.g. the schema is not migrated (EX_UNAVAILABLE). */
  unavailable: 69,
  /** Invalid configuration; the message lists every bad variable (EX_CONFIG). */
  config: 78,
} as const;

/** A dependency is not ready for this process; it exits with `EXIT_CODES.unavailable` and this message only. */
export class UnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnavailableError';
  }
}

/** Maps an error that ended an entry point to its exit code and the text to print. */
export function exitFor(name: string, err: unknown): { code: number; message: string } {
  if (err instanceof ConfigError) return { code: EXIT_CODES.config, message: err.message };
  if (err instanceof UnavailableError) return { code: EXIT_CODES.unavailable, message: err.message };
  const e = err instanceof Error ? err : new Error(String(err));
  return { code: EXIT_CODES.failure, message: `${name} failed: ${redactUrl(e.stack ?? e.message)}` };
}

/**
 * Runs `main`; on failure, prints the message and exits with the failure's code. Connection strings in
 * the message are redacted: a stack trace may quote one. `handle` lets an entry point map errors of its
 * own (the client's usage errors) first. On success the process ends by itself once its handles close.
 */
export function runMain(
  name: string,
  main: () => Promise<void>,
  handle?: (err: unknown) => { code: number; message: string } | undefined,
): void {
  main().then(
    () => undefined,
    (err: unknown) => {
      const { code, message } = handle?.(err) ?? exitFor(name, err);
      if (message) process.stderr.write(`${message}\n`);
      process.exit(code);
    },
  );
}

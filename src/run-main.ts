/**
 * The one way an entry point (worker, relay, migrate, client) ends: a readable message on stderr and an
 * exit code that says what kind of failure it was, so a supervisor or a script can tell a bad
 * configuration (fix the environment) from a missing dependency (wait or migrate) from a crash.
 */
import { ConfigError } from './config';
import { redactUrl } from './observability/redact';
import type { Logger } from './observability/logger';
import { UnavailableError } from './unavailable';

export { UnavailableError };

/** Exit codes of the entry points (sysexits.h names where one fits). */
export const EXIT_CODES = {
  /** Finished normally. */
  ok: 0,
  /** Anything unexpected; the message carries the stack. Also commander's usage errors (an unknown option, a bad value). */
  failure: 1,
  /** The client's command line names neither or both of two alternatives, e.g. `explain` without --owner or --document (EX_USAGE). */
  usage: 64,
  /** A dependency is not in the state this process needs, e.g. the schema is not migrated (EX_UNAVAILABLE). */
  unavailable: 69,
  /** Invalid configuration; the message lists every bad variable (EX_CONFIG). */
  config: 78,
} as const;

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

/** What {@link stopOnUnhandledErrors} saw: the first error nothing handled, if any. */
export interface UnhandledErrors {
  readonly first: Error | undefined;
  /** Removes the handlers (tests; a process that ends needs not). */
  dispose(): void;
}

/**
 * Turns an error nothing handled (a rejected promise nobody awaited, an exception thrown from a callback)
 * into an orderly stop instead of Node's immediate exit, which would cut batches and activities off mid-way:
 * the error is logged, `stop` is called once, and the entry point, once its shutdown is done, throws
 * `first` so that it ends with exit code 1. A shutdown that hangs after such an error ends the process
 * after `graceMs`.
 */
export function stopOnUnhandledErrors(
  logger: Pick<Logger, 'error'>,
  stop: () => void,
  graceMs = 120_000,
): UnhandledErrors {
  let first: Error | undefined;
  const onError = (kind: string) => (reason: unknown) => {
    const err = reason instanceof Error ? reason : new Error(String(reason));
    logger.error({ err: redactUrl(err.stack ?? err.message), kind }, 'unhandled error, stopping');
    if (first) return;
    first = err;
    setTimeout(() => {
      process.stderr.write(`shutdown after an unhandled error took more than ${graceMs} ms\n`);
      process.exit(EXIT_CODES.failure);
    }, graceMs).unref();
    stop();
  };
  const onRejection = onError('unhandledRejection');
  const onException = onError('uncaughtException');
  process.on('unhandledRejection', onRejection);
  process.on('uncaughtException', onException);
  return {
    get first() {
      return first;
    },
    dispose() {
      process.off('unhandledRejection', onRejection);
      process.off('uncaughtException', onException);
    },
  };
}

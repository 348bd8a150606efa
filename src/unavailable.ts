/**
 * The error an entry point ends with when a dependency is not ready (exit code `unavailable`). Its own
 * module, so that the connection code that throws it need not import the entry-point plumbing, which
 * imports the configuration, which reads the connection profile.
 */

/** A dependency is not ready for this process; it exits with `EXIT_CODES.unavailable` and this message only. */
export class UnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnavailableError';
  }
}

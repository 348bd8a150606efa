/**
 * How a failure reads in a cycle's result, its logs and the Web UI: `type: message`. Workflow-safe, so the
 * workflow and the activities describe a failure the same way.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';

/**
 * `type: message` of an application failure (the activity's failure inside an {@link ActivityFailure}), or
 * the message of any other error. Activities pass errors through `toActivityFailure` first, so no connection
 * password reaches the text.
 */
export function describeFailure(err: unknown): string {
  const failure = err instanceof ActivityFailure && err.cause ? err.cause : err;
  if (failure instanceof ApplicationFailure && failure.type) return `${failure.type}: ${failure.message}`;
  return failure instanceof Error ? failure.message : String(failure);
}

/**
 * `err` as an `Error`: itself when it is one, else an `Error` whose message is its text. A `catch` gets
 * `unknown`; anything can be thrown, and a cast would leave `.message` undefined for a thrown string.
 */
export function errorOf(err: unknown): Error {
  return err instanceof Error ? err : new Error(typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err)));
}

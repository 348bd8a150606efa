/**
 * A port the stack chose free can be taken by another process before its server binds it (seen about once in
 * ten starts of the Temporal dev server on a busy machine). The server then exits saying the address is in use;
 * the stack chooses other ports and starts it again, and gives up on any other failure.
 */
import { errorOf } from '../../src/domain/failures';

/** Starts of one server on freshly chosen ports before the stack gives up. */
export const PORT_TRIES = 3;

/** A server could not bind a port it was given: another process took it after it was chosen. */
export class PortTakenError extends Error {
  override name = 'PortTakenError';
}

/** Whether a server's own output says it could not bind its address because something else holds it. */
export function saysAddressInUse(output: string): boolean {
  return /address already in use/i.test(output);
}

/**
 * Runs `start` (which chooses its ports anew each time) until it succeeds, again after a
 * {@link PortTakenError} up to {@link PORT_TRIES} starts in all, saying so through `log` (the stack's stderr);
 * any other failure, and the last taken port, is thrown as it is.
 */
export async function retryOnTakenPort<T>(
  what: string,
  log: (line: string) => void,
  start: () => Promise<T>,
): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await start();
    } catch (err) {
      if (!(err instanceof PortTakenError) || tries >= PORT_TRIES) throw err;
      log(
        `${what} did not start (${errorOf(err).message.split('\n')[0]}); trying other ports (${tries + 1} of ${PORT_TRIES})`,
      );
    }
  }
}

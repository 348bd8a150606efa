/**
 * Connection errors that say what to set. PostgreSQL and Node's TLS layer say what was refused
 * ("no encryption", "self-signed certificate in certificate chain"), not which setting of ours fixes it;
 * the sentence added here names the variable and the URL parameter.
 */
import pg from 'pg';

/** Node's codes for a certificate chain that does not end at a CA the client was given. */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_UNTRUSTED',
]);

/** The advice for `err`, or undefined when it is no refusal we can advise on. */
function advice(err: Error & { code?: string }, variable: string): string | undefined {
  if (err.code === '28000' && /no encryption/.test(err.message)) {
    return `${err.message}. PostgreSQL takes this role over TLS only: add sslmode=verify-full&sslrootcert=<CA file> to ${variable}`;
  }
  if (err.code === '28P01') return `${err.message}: the password in ${variable} is not the role's`;
  if (err.code && UNTRUSTED.has(err.code)) {
    return `PostgreSQL's TLS certificate is not trusted (${err.message}): set sslrootcert=<the CA file that issued it> in ${variable}`;
  }
  if (err.code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `PostgreSQL's TLS certificate does not name the host of ${variable} (${err.message}): connect by a name it lists`;
  }
  if (err.message === 'The server does not support SSL connections') {
    return `${err.message}: PostgreSQL has TLS off (ssl = on in postgresql.conf), while ${variable} asks for it (sslmode)`;
  }
  return undefined;
}

/**
 * Adds to `err`'s message (and stack) what to set in `variable` when it is a refusal a person can fix
 * there: plaintext refused, wrong password, untrusted or misnamed certificate, TLS off. The error keeps
 * its class and code, so callers that classify it still can.
 */
export function explainConnectionError<E extends Error>(err: E, variable: string): E {
  const explained = advice(err, variable);
  if (explained === undefined || err.message.includes(variable)) return err;
  const before = err.message;
  err.message = explained;
  err.stack = err.stack?.includes(before) ? err.stack.replace(before, explained) : `${explained}\n${err.stack ?? ''}`;
  return err;
}

/** A node-postgres client class whose failed `connect` explains itself (see {@link explainConnectionError}). */
export function explainingClient(variable: string): typeof pg.Client {
  return class ExplainingClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: (...args: never[]) => void): Promise<pg.Client> | void {
      if (callback) {
        // pg calls back with (null, client) on success, as the pool expects.
        const done = callback as (err: Error | null, c: pg.Client) => void;
        return super.connect((err: Error | null) => done(err && explainConnectionError(err, variable), this));
      }
      return super.connect().catch((err: Error) => {
        throw explainConnectionError(err, variable);
      });
    }
  };
}

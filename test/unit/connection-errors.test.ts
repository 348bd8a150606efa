import { explainConnectionError } from '../../src/db/connection-errors';

/** An error shaped as node-postgres or Node's TLS layer hands it over. */
function failure(message: string, code?: string): Error {
  return Object.assign(new Error(message), code ? { code } : {});
}

describe('explainConnectionError', () => {
  it.each([
    [
      'a plaintext connection refused by pg_hba.conf',
      failure(
        'pg_hba.conf rejects connection for host "127.0.0.1", user "expiry_reminder_worker", database "p", no encryption',
        '28000',
      ),
      /no encryption\. PostgreSQL takes this role over TLS only: add sslmode=verify-full&sslrootcert=<CA file> to DATABASE_URL/,
    ],
    [
      'a wrong password',
      failure('password authentication failed for user "expiry_reminder_worker"', '28P01'),
      /password authentication failed .*: the password in DATABASE_URL is not the role's/,
    ],
    [
      'a server certificate from a CA the client was not given',
      failure('self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN'),
      /PostgreSQL's TLS certificate is not trusted \(self-signed certificate in certificate chain\): set sslrootcert=<the CA file that issued it> in DATABASE_URL/,
    ],
    [
      'a host name the certificate does not list',
      failure(
        "Hostname/IP does not match certificate's altnames: IP: 127.0.0.2 is not in the cert's list: 127.0.0.1",
        'ERR_TLS_CERT_ALTNAME_INVALID',
      ),
      /PostgreSQL's TLS certificate does not name the host of DATABASE_URL \(.*127\.0\.0\.2.*\): connect by a name it lists/,
    ],
    [
      'a server with TLS off',
      failure('The server does not support SSL connections'),
      /The server does not support SSL connections: PostgreSQL has TLS off \(ssl = on in postgresql\.conf\)/,
    ],
  ])('%s says what to set', (_case, err, expected) => {
    const explained = explainConnectionError(err, 'DATABASE_URL');
    expect(explained).toBe(err);
    expect(explained.message).toMatch(expected);
    expect(explained.stack).toContain(explained.message);
    expect((explained as { code?: string }).code).toBe((err as { code?: string }).code);
  });

  it('leaves other errors, and an error it explained once, as they were', () => {
    const other = failure('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');
    expect(explainConnectionError(other, 'DATABASE_URL').message).toBe('connect ECONNREFUSED 127.0.0.1:5432');
    const twice = failure('password authentication failed for user "x"', '28P01');
    explainConnectionError(explainConnectionError(twice, 'DATABASE_URL'), 'DATABASE_URL');
    expect(twice.message.match(/the password in DATABASE_URL/g)).toHaveLength(1);
  });
});

/** Connection settings shared by the worker and the client (address, namespace, TLS or API key). */
import fs from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import type { Config } from '../config';

/** Options accepted by both `NativeConnection.connect` and `Connection.connect`. */
export function temporalConnectionOptions(config: Pick<Config, 'temporal'>): {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
} {
  const { address, apiKey, tls } = config.temporal;
  if (!tls) return { address, apiKey };
  const read = (path: string, name: string) => {
    try {
      return fs.readFileSync(path);
    } catch (err) {
      throw new Error(`${name}=${path}: cannot read the file (${(err as Error).message})`);
    }
  };
  return {
    address,
    apiKey,
    tls: {
      serverNameOverride: tls.serverName,
      serverRootCACertificate: tls.caPath ? read(tls.caPath, 'TEMPORAL_TLS_CA_PATH') : undefined,
      clientCertPair:
        tls.certPath && tls.keyPath
          ? { crt: read(tls.certPath, 'TEMPORAL_TLS_CERT_PATH'), key: read(tls.keyPath, 'TEMPORAL_TLS_KEY_PATH') }
          : undefined,
    },
  };
}

/** Free loopback ports for the local stack's servers. */
import net from 'node:net';

/** A TCP port free on loopback right now (the OS picks it; a race with another process is possible but rare). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

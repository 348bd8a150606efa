/**
 * Toxiproxy for the fault suite: a TCP proxy on loopback whose toxics cut or slow one process's path to
 * PostgreSQL. The server is built once from the Go module proxy into ~/.cache/expiry-reminder (like the
 * `temporal` CLI into ~/go/bin) and driven with toxiproxy-node-client.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Toxiproxy, type Proxy } from 'toxiproxy-node-client';
import { freePort } from '../src/observability/ports';
import { errorOf } from '../src/domain/failures';

const TOXIPROXY_MODULE = 'github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0';

/** The toxiproxy server binary: TOXIPROXY_SERVER_PATH, else the cached build, else built now with Go. */
function findOrBuildToxiproxy(log: (line: string) => void): string {
  if (process.env.TOXIPROXY_SERVER_PATH) return process.env.TOXIPROXY_SERVER_PATH;
  const dir = path.join(
    process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
    'expiry-reminder',
    'toxiproxy-2.12.0',
  );
  const binary = path.join(dir, 'server');
  if (fs.existsSync(binary)) return binary;
  log(`building Toxiproxy: go install ${TOXIPROXY_MODULE} into ${dir} (first run only)`);
  fs.mkdirSync(dir, { recursive: true });
  const res = spawnSync('go', ['install', TOXIPROXY_MODULE], {
    env: { ...process.env, GOBIN: dir },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (res.status !== 0 || !fs.existsSync(binary)) {
    throw new Error(
      `go install ${TOXIPROXY_MODULE} failed (exit ${res.status}); set TOXIPROXY_SERVER_PATH to a toxiproxy server binary`,
    );
  }
  return binary;
}

export interface RunningToxiproxy {
  client: Toxiproxy;
  /** A proxy on a free loopback port in front of `upstream` (host:port); returns it and its port. */
  proxy(name: string, upstream: string): Promise<{ proxy: Proxy; port: number }>;
  stop(): Promise<void>;
}

/** Starts a toxiproxy server on a free loopback port and waits until its API answers. */
export async function startToxiproxy(log: (line: string) => void): Promise<RunningToxiproxy> {
  const binary = findOrBuildToxiproxy(log);
  const apiPort = await freePort();
  const child: ChildProcess = spawn(binary, ['-host', '127.0.0.1', '-port', String(apiPort)], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const client = new Toxiproxy(`http://127.0.0.1:${apiPort}`);
  const until = Date.now() + 15_000;
  for (;;) {
    try {
      await client.getVersion();
      break;
    } catch (err) {
      if (Date.now() > until || child.exitCode !== null) {
        child.kill('SIGKILL');
        throw new Error(`toxiproxy did not start on 127.0.0.1:${apiPort}: ${errorOf(err).message}`);
      }
      await sleep(100);
    }
  }
  return {
    client,
    async proxy(name, upstream) {
      const port = await freePort();
      const proxy = await client.createProxy({ name, listen: `127.0.0.1:${port}`, upstream });
      return { proxy, port };
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

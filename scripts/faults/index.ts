/**
 * `npm run test:faults [-- --owners N --repeat K --only s1,s9 --seed N --report docs/RELIABILITY.md --production --partitions K]`
 *
 * The fault suite: real worker and relay processes, a real PostgreSQL, Temporal dev server and Kafka
 * broker, and faults injected into them (SIGKILL, server restarts, broker outages, bad input). With
 * `--production` the same scenarios run on the stack's production profile (`npm run stack -- --production`):
 * the Temporal server on PostgreSQL with mTLS, PostgreSQL with TLS and SCRAM, Kafka on SASL_SSL. After
 * each scenario it checks the invariants (with `--partitions K`, every cycle runs its day in K partitions,
 * child workflows that the faults hit as well):
 *   I1 every due (document, current threshold) has exactly one marker (nothing is left due);
 *   I2 every current-threshold marker carried an event, in exactly one outbox row;
 *   I3 no outbox row names a (document, threshold) without its marker;
 *   I4 every outbox row reached Kafka at least once (scenarios with a relay).
 * It prints a table and a closing "N passed, N failed" line, and exits non-zero on any failure.
 *
 * This file is the command line; the stack and processes are in `harness.ts` and `processes.ts`, the
 * checks in `invariants.ts`, the skeleton the scenarios share in `runner.ts`, and each scenario in
 * `scenarios/`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config';
import { CYCLE_SETTINGS } from '../../src/domain/settings';
import { createKafka } from '../../src/relay/kafka';
import { connectTemporal, temporalConnectionOptions } from '../../src/temporal/connection';
import { LOCAL_ROLE_PASSWORDS, startStack, type Stack } from '../stack';
import type { Harness } from './harness';
import { table, writeReport, type Row } from './report';
import type { Scenario, ScenarioResult } from './runner';
import { SCENARIOS } from './scenarios';
import { errorOf } from '../../src/domain/failures';

const MAX_PARTITIONS = CYCLE_SETTINGS.partitions.max;

const { values: args } = parseArgs({
  options: {
    owners: { type: 'string', default: '3000' },
    repeat: { type: 'string', default: '1' },
    only: { type: 'string' },
    report: { type: 'string' },
    seed: { type: 'string', default: process.env.FAULTS_SEED },
    production: { type: 'boolean', default: false },
    partitions: { type: 'string' },
  },
});
const SEED = args.seed !== undefined ? Number(args.seed) : Math.floor(Math.random() * 2 ** 31);
if (!Number.isSafeInteger(SEED)) throw new Error(`--seed must be a whole number, got ${args.seed}`);
const OWNERS = Number(args.owners);
const REPEAT = Number(args.repeat);
const PARTITIONS = args.partitions === undefined ? undefined : Number(args.partitions);
if (PARTITIONS !== undefined && !(Number.isInteger(PARTITIONS) && PARTITIONS >= 1 && PARTITIONS <= MAX_PARTITIONS)) {
  throw new Error(`--partitions must be a whole number from 1 to ${MAX_PARTITIONS}, got ${args.partitions}`);
}
const root = path.resolve(__dirname, '..', '..');
const say = (line: string) => process.stdout.write(`${line}\n`);

/** Runs one repetition of `scenario`; a scenario that throws is a failed row, and the suite goes on. */
async function runOnce(h: Harness, scenario: Scenario, repetition: number): Promise<Row> {
  const started = Date.now();
  let outcome: ScenarioResult;
  try {
    outcome = await scenario.run(h);
  } catch (err) {
    outcome = { size: '', detail: '', problems: [String(errorOf(err).message)] };
  }
  const { size, detail, problems } = outcome;
  return {
    scenario: `${scenario.id}: ${scenario.name}`,
    repetitions: repetition,
    dataSize: size,
    checks: scenario.checks,
    // A failed row keeps its detail too: s11's seed is in it, so the failure replays.
    result: problems.length ? `FAIL: ${problems.join('; ')}${detail ? ` (${detail})` : ''}` : `pass (${detail})`,
    seconds: Math.round((Date.now() - started) / 1000),
    ok: problems.length === 0,
  };
}

/** s8, security: no secret in anything the processes printed over the whole suite. */
function secretsScan(h: Harness): Row {
  const printed = h.output.join('');
  const leaks = [
    LOCAL_ROLE_PASSWORDS.worker,
    LOCAL_ROLE_PASSWORDS.relay,
    new URL(h.stack.postgres.adminUrl).password,
    ...Object.values(h.stack.secrets?.passwords ?? {}),
  ].filter((s) => printed.includes(s));
  return {
    scenario: 's8: no password in any process output of the suite',
    repetitions: 1,
    dataSize: `${printed.length} bytes of output`,
    checks: 'scan',
    result: leaks.length ? `FAIL: ${leaks.length} secrets printed` : 'pass',
    seconds: 0,
    ok: leaks.length === 0,
  };
}

/** The brokers of a plaintext stack, or the production profile's broker as its admin (the relay's user may only write). */
function topicReader(stack: Stack): Harness['topicReader'] {
  return stack.kafka?.production ? createKafka(loadConfig(stack.kafka.clientEnv('admin'))) : stack.kafkaBrokers;
}

async function main(): Promise<void> {
  const only = args.only?.split(',');
  const selected = SCENARIOS.filter((s) => !only || only.includes(s.id));
  const production = args.production === true;
  // The production profile's Temporal keeps its state in PostgreSQL; the dev server needs a file to survive s3.
  const temporalDbFile = production
    ? undefined
    : path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'faults-temporal-')), 'temporal.db');
  say(
    `fault suite${production ? ' on the production profile' : ''}: ${selected.length} scenarios × ${REPEAT}, ` +
      `${OWNERS} owners, seed ${SEED} (--seed ${SEED} replays)${PARTITIONS ? `, every cycle in ${PARTITIONS} partitions` : ''}`,
  );
  const stack = await startStack({ ui: false, temporalDbFile, production, log: (l) => say(`[stack] ${l}`) });
  const connection = await connectTemporal(temporalConnectionOptions(loadConfig(stack.env)), (o) =>
    Connection.connect(o),
  );
  const h: Harness = {
    stack,
    client: new Client({ connection }),
    topicReader: topicReader(stack),
    owners: OWNERS,
    seed: SEED,
    partitions: PARTITIONS,
    output: [],
    say,
  };
  const rows: Row[] = [];
  try {
    for (const scenario of selected) {
      for (let i = 1; i <= REPEAT; i++) {
        const row = await runOnce(h, scenario, i);
        rows.push(row);
        say(`${row.ok ? 'PASS' : 'FAIL'} ${row.scenario} #${i} (${row.seconds} s): ${row.result}`);
      }
    }
    rows.push(secretsScan(h));
  } finally {
    await connection.close();
    await stack.stop();
  }
  const markdown = table(rows);
  say(`\n${markdown}\n`);
  if (args.report) {
    const command = `npm run test:faults -- --owners ${OWNERS} --repeat ${REPEAT} --seed ${SEED}${only ? ` --only ${only.join(',')}` : ''}${production ? ' --production' : ''}${PARTITIONS ? ` --partitions ${PARTITIONS}` : ''}`;
    writeReport(path.resolve(root, args.report), command, markdown);
  }
  const failed = rows.filter((r) => !r.ok).length;
  say(`${rows.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((err: Error) => {
  process.stderr.write(`fault suite failed: ${err.stack}\n`);
  process.exit(1);
});

/**
 * `npm run client -- <command>`: the operator's commands. Output is JSON on stdout (pipe it to jq);
 * errors go to stderr with a non-zero exit code.
 */
import crypto from 'node:crypto';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { exitOnConfigError, loadConfig, type Config } from './config';
import type { CycleInput, CycleResult } from './domain/cycle';
import { isIsoDate, utcDate } from './domain/thresholds';
import { MANUAL_WORKFLOW_ID_PREFIX, SCHEDULE_ID, WORKFLOW_TYPE } from './names';
import { applySchedule, ensureSearchAttributes, triggerSchedule } from './schedule';
import { temporalConnectionOptions } from './temporal';
import { manualCycleMetadata } from './ui-metadata';

/** Opens a client, runs `fn`, and always closes the connection. */
async function withClient<T>(config: Config, fn: (client: Client) => Promise<T>): Promise<T> {
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    return await fn(new Client({ connection, namespace: config.temporal.namespace }));
  } finally {
    await connection.close();
  }
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

function parseDate(value: string): string {
  if (!isIsoDate(value)) throw new InvalidArgumentError('expected a calendar date YYYY-MM-DD, e.g. 2026-12-01');
  return value;
}

/** Starts a cycle by hand; returns its ids, or its result when `wait`. */
export async function runCycleCommand(
  client: Client,
  config: Config,
  options: { asOf?: string; wait?: boolean },
): Promise<{ workflowId: string; runId: string; result?: CycleResult }> {
  const input: CycleInput = options.asOf ? { asOf: options.asOf } : {};
  const day = options.asOf ?? utcDate(new Date());
  const handle = await client.workflow.start(WORKFLOW_TYPE, {
    taskQueue: config.temporal.taskQueue,
    workflowId: `${MANUAL_WORKFLOW_ID_PREFIX}-${day}-${crypto.randomBytes(3).toString('hex')}`,
    args: [input],
    ...manualCycleMetadata(options.asOf, config),
  });
  const ids = { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
  if (!options.wait) return ids;
  return { ...ids, result: (await handle.result()) as CycleResult };
}

/** The command tree; exported so tests can drive it in-process. */
export function buildProgram(config: () => Config): Command {
  const program = new Command('expiry-reminder')
    .description('Operate the document-expiry reminder job on Temporal')
    .showHelpAfterError()
    // Throw instead of exiting, so callers (main, tests) decide; subcommands inherit this.
    .exitOverride();

  const schedule = program.command('schedule').description(`the Temporal Schedule "${SCHEDULE_ID}"`);
  schedule
    .command('apply')
    .description('create the schedule from configuration, or update it in place (keeps pause state)')
    .action(async () => {
      const cfg = config();
      const { outcome, registered } = await withClient(cfg, async (c) => {
        const registered = await ensureSearchAttributes(c, cfg.temporal.namespace);
        return { registered, outcome: await applySchedule(c, cfg) };
      });
      print({
        scheduleId: SCHEDULE_ID,
        outcome,
        everyMs: cfg.schedule.intervalMs,
        offsetMs: cfg.schedule.offsetMs,
        searchAttributesRegistered: registered,
      });
    });
  schedule
    .command('trigger')
    .description('start a cycle now through the schedule (skipped while one is running)')
    .action(async () => {
      await withClient(config(), triggerSchedule);
      print({ scheduleId: SCHEDULE_ID, triggered: true, overlap: 'skip' });
    });

  const cycle = program.command('cycle').description('reminder cycles');
  cycle
    .command('run')
    .description('start one cycle directly (outside the schedule)')
    .option('--as-of <date>', 'compute thresholds as of this date (YYYY-MM-DD, UTC)', parseDate)
    .option('--wait', 'wait for the cycle to end and print its result')
    .action(async (opts: { asOf?: string; wait?: boolean }) => {
      const cfg = config();
      print(await withClient(cfg, (c) => runCycleCommand(c, cfg, opts)));
    });

  return program;
}

async function main(): Promise<void> {
  const config = () => exitOnConfigError(() => loadConfig());
  await buildProgram(config).parseAsync(process.argv);
}

if (require.main === module) {
  main().catch((err: Error) => {
    // Commander has already printed its usage message (or the help).
    if (err instanceof CommanderError) process.exit(err.exitCode);
    const cause = err instanceof WorkflowFailedError && err.cause ? `: ${err.cause.message}` : '';
    process.stderr.write(`error: ${err.message}${cause}\n`);
    process.exit(1);
  });
}

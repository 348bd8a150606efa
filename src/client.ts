/**
 * `npm run client -- <command>`: the operator's commands. Output is JSON on stdout (pipe it to jq);
 * errors go to stderr with a non-zero exit code.
 */
import { ScheduleNotFoundError, WorkflowFailedError, type Client } from '@temporalio/client';
import { Command, CommanderError } from 'commander';
import { ConfigError, loadConfig, workerVersion, type Config } from './config';
import { utcDate } from './domain/dates';
import { CYCLE_SETTINGS } from './domain/settings';
import { SCHEDULE_ID } from './domain/names';
import {
  bounds,
  date,
  documentId,
  nonEmpty,
  outboxRowId,
  ownerId,
  settingArgument,
  thresholds,
  waitDuration,
  wholeNumberFrom,
} from './operations/arguments';
import { explainCommand, explanationText } from './operations/explain';
import { listCycles, previewCycleCommand, runManualCycle } from './operations/cycles';
import { deploymentStatus, makeCurrent, rampVersion } from './operations/deployment';
import { listParkedCommand, retryParkedCommand } from './operations/outbox';
import { resultWithProgress } from './operations/progress';
import {
  applySchedule,
  deleteSchedule,
  describeSchedule,
  ensureSearchAttributes,
  pauseSchedule,
  unpauseSchedule,
} from './operations/schedule';
import { backfillSchedule, cycleStartedBy, scheduleActionRuns, triggerSchedule } from './operations/schedule-runs';
import { withTemporalClient as withClient } from './temporal/connection';
import { EXIT_CODES, runMain, UnavailableError } from './run-main';
import type { CycleWorkflow } from './workflows';

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The schedule a command works on: `--schedule-id`, else the job's schedule. */
function scheduleIdOf(command: Command): string {
  return (command.optsWithGlobals() as { scheduleId?: string }).scheduleId ?? SCHEDULE_ID;
}

/**
 * Runs `fn` with a client on the schedule `cmd` names, turning "no such schedule" into a message that says
 * what to do about it.
 */
async function withSchedule<T>(
  config: Config,
  cmd: Command,
  fn: (client: Client, scheduleId: string) => Promise<T>,
): Promise<T> {
  const scheduleId = scheduleIdOf(cmd);
  return withClient(config, async (client) => {
    try {
      return await fn(client, scheduleId);
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) {
        throw new Error(`schedule "${scheduleId}" does not exist in this namespace (create it with: schedule apply)`);
      }
      throw err;
    }
  });
}

/**
 * How long `deployment current` waits by default for the version's first poll: what `npm run stack` waits for a
 * worker it started, so a deploy that makes a version current right after starting its workers (compose's
 * one-shot) finds them.
 */
const WAIT_FOR_POLLERS_MS = 120_000;

/** The command tree; exported so tests can drive it in-process. */
export function buildProgram(config: () => Config): Command {
  const program = new Command('expiry-reminder')
    .description('Operate the document-expiry reminder job on Temporal')
    .showHelpAfterError()
    // Throw instead of exiting, so callers (main, tests) decide; subcommands inherit this.
    .exitOverride();

  program.option('--schedule-id <id>', `the schedule to work on (default "${SCHEDULE_ID}")`, nonEmpty);

  const schedule = program.command('schedule').description(`the Temporal Schedule (default "${SCHEDULE_ID}")`);
  schedule
    .command('apply')
    .description('create the schedule from configuration, or update it in place (keeps pause state, note and limits)')
    .option(
      '--partitions <n>',
      `run every scheduled cycle in this many partitions (${bounds('partitions')}); default: each cycle plans its day`,
      settingArgument('partitions'),
    )
    .action(async (opts: { partitions?: number }, cmd: Command) => {
      const cfg = config();
      const scheduleId = scheduleIdOf(cmd);
      const { outcome, registered } = await withClient(cfg, async (c) => {
        const registered = await ensureSearchAttributes(c, cfg.temporal.namespace);
        return { registered, outcome: await applySchedule(c, cfg, scheduleId, { partitions: opts.partitions }) };
      });
      print({
        scheduleId,
        outcome,
        everyMs: cfg.schedule.intervalMs,
        offsetMs: cfg.schedule.offsetMs,
        partitions: opts.partitions ?? 'planned by each cycle',
        searchAttributesRegistered: registered,
      });
    });
  schedule
    .command('describe')
    .description('show the spec, policies, pause state and note, next action times and recent runs')
    .action(async (_opts: object, cmd: Command) => {
      print(await withSchedule(config(), cmd, describeSchedule));
    });
  schedule
    .command('pause')
    .description('pause the schedule (no cycle starts on its own until unpaused; trigger and backfill still work)')
    .requiredOption(
      '--reason <text>',
      "why; stored as the schedule's note, shown in the Web UI and by describe",
      nonEmpty,
    )
    .action(async (opts: { reason: string }, cmd: Command) => {
      const scheduleId = scheduleIdOf(cmd);
      await withSchedule(config(), cmd, (c) => pauseSchedule(c, opts.reason, scheduleId));
      print({ scheduleId, paused: true, note: opts.reason });
    });
  schedule
    .command('unpause')
    .description('unpause the schedule')
    .option('--reason <text>', 'replaces the pause note', nonEmpty)
    .action(async (opts: { reason?: string }, cmd: Command) => {
      const scheduleId = scheduleIdOf(cmd);
      await withSchedule(config(), cmd, (c) => unpauseSchedule(c, opts.reason, scheduleId));
      print({ scheduleId, paused: false, note: opts.reason ?? '(no reason provided)' });
    });
  schedule
    .command('trigger')
    .description('start a cycle now through the schedule (skipped while one is running)')
    .option(
      '--wait',
      'wait for the cycle to end (the one started, or the one already running) and print its result; progress on stderr',
    )
    .action(async (opts: { wait?: boolean }, cmd: Command) => {
      print(
        await withSchedule(config(), cmd, async (c, scheduleId) => {
          const before = opts.wait ? await scheduleActionRuns(c, scheduleId) : new Set<string>();
          await triggerSchedule(c, scheduleId);
          if (!opts.wait) return { scheduleId, triggered: true, overlap: 'skip' };
          const cycle = await cycleStartedBy(c, scheduleId, before);
          const handle = c.workflow.getHandle<CycleWorkflow>(cycle.workflowId, undefined, {
            firstExecutionRunId: cycle.firstExecutionRunId,
          });
          return { scheduleId, triggered: true, overlap: 'skip', ...cycle, result: await resultWithProgress(handle) };
        }),
      );
    });
  schedule
    .command('backfill')
    .description(
      "run the schedule's actions of the UTC days --from..--to (both included), one after another; " +
        'each cycle runs as of its own start (today), never as of the past day: the first sends what is due ' +
        'now (a crossed threshold stays crossed), the rest find nothing',
    )
    .requiredOption('--from <date>', 'first day, YYYY-MM-DD (UTC)', date)
    .requiredOption('--to <date>', 'last day, YYYY-MM-DD (UTC), not in the future', date)
    .action(async (opts: { from: string; to: string }, cmd: Command) => {
      print(
        await withSchedule(config(), cmd, (c, scheduleId) => backfillSchedule(c, opts.from, opts.to, { scheduleId })),
      );
    });
  schedule
    .command('delete')
    .description('delete the schedule (cycles it started keep running; schedule apply creates it again)')
    .action(async (_opts: object, cmd: Command) => {
      const scheduleId = scheduleIdOf(cmd);
      await withSchedule(config(), cmd, (c) => deleteSchedule(c, scheduleId));
      print({ scheduleId, deleted: true });
    });

  const cycle = program.command('cycle').description('reminder cycles');
  cycle
    .command('run')
    .description('start one cycle directly (outside the schedule)')
    .option('--as-of <date>', 'compute thresholds as of this date (YYYY-MM-DD, UTC; not after today)', date)
    .option('--wait', 'wait for the cycle to end and print its result')
    .option(
      '--partitions <n>',
      `split the day into this many partitions (${bounds('partitions')}); default: planned from the due count`,
      settingArgument('partitions'),
    )
    .option(
      '--pages-per-claim <n>',
      `${CYCLE_SETTINGS.pagesPerClaim.about} (${bounds('pagesPerClaim')}, default ${CYCLE_SETTINGS.pagesPerClaim.default})`,
      settingArgument('pagesPerClaim'),
    )
    .action(async (opts: { asOf?: string; wait?: boolean; partitions?: number; pagesPerClaim?: number }) => {
      const cfg = config();
      print(await withClient(cfg, (c) => runManualCycle(c, cfg, opts)));
    });
  cycle
    .command('preview')
    .description(
      'list what a cycle would send, owner by owner, without writing anything (a read-only transaction as ' +
        'the support role, SUPPORT_DATABASE_URL, where set; else as the worker, DATABASE_URL)',
    )
    .option('--as-of <date>', "the cycle's AsOf date (YYYY-MM-DD, UTC; default today)", date)
    .option('--thresholds <list>', 'override REMINDER_THRESHOLDS_DAYS, e.g. 30,7,1,0', thresholds)
    .option(
      '--retention-days <n>',
      `override REMINDER_RETENTION_DAYS (${bounds('retentionDays')})`,
      settingArgument('retentionDays'),
    )
    .action(async (opts: { asOf?: string; thresholds?: number[]; retentionDays?: number }) => {
      print(
        await previewCycleCommand(config(), {
          asOfDate: opts.asOf ?? utcDate(new Date()),
          thresholdsDays: opts.thresholds,
          retentionDays: opts.retentionDays,
        }),
      );
    });
  cycle
    .command('status')
    .description('list recent cycles on the task queue: status, AsOf, outcome and counts')
    .option('--limit <n>', 'how many (1-1000)', wholeNumberFrom(1, 1000), 10)
    .action(async (opts: { limit: number }) => {
      const cfg = config();
      print(await withClient(cfg, (c) => listCycles(c, { taskQueue: cfg.temporal.taskQueue, limit: opts.limit })));
    });

  const deployment = program
    .command('deployment')
    .description(
      "the workers' Worker Deployment (TEMPORAL_DEPLOYMENT_NAME): which version new cycles start on; " +
        'a cycle runs to its end on the version that started it (docs/SAFE-DEPLOYS.md)',
    );
  deployment
    .command('status')
    .description(
      'current and ramping version, and each version with its open cycles (visibility) and drainage (the server)',
    )
    .action(async () => {
      const cfg = config();
      print(await withClient(cfg, (c) => deploymentStatus(c, cfg)));
    });
  deployment
    .command('current')
    .description(
      "make a version current: new cycles (and the schedule's next) start on it; a rollback is this command " +
        'with the previous build id. Refused while the version has no workers polling',
    )
    .argument(
      '[buildId]',
      "the version's build id (as `deployment status` or the worker's start log shows it); default: the one a " +
        "worker started here takes, TEMPORAL_WORKER_BUILD_ID (an image's own), else this checkout's commit",
      nonEmpty,
    )
    .option(
      '--wait <duration>',
      "how long to wait for the version's workers to poll, e.g. just after they started (0: not at all)",
      waitDuration,
      WAIT_FOR_POLLERS_MS,
    )
    .action(async (buildId: string | undefined, opts: { wait: number }) => {
      const cfg = config();
      const version = buildId ?? workerVersion(cfg).buildId;
      print(await withClient(cfg, (c) => makeCurrent(c, cfg, version, { waitForPollersMs: opts.wait })));
    });
  deployment
    .command('ramp')
    .description('send a percentage of new cycles to a version, the rest to the current one; `ramp off` stops the ramp')
    .argument('<buildId>', "the version's build id, or `off`", nonEmpty)
    .argument('[percent]', 'of new cycles, 0-100', wholeNumberFrom(0, 100))
    .action(async (buildId: string, percent: number | undefined, _opts: object, cmd: Command) => {
      if (buildId !== 'off' && percent === undefined) cmd.error('error: give the percentage, e.g. ramp <buildId> 10');
      const cfg = config();
      print(await withClient(cfg, (c) => rampVersion(c, cfg, buildId === 'off' ? null : buildId, percent ?? 0)));
    });

  program
    .command('explain')
    .description(
      'why (not)? for one investor: each document with its verdict as of a day, its markers and the cycles that ' +
        'wrote them, what the next cycle would send, and the outbox rows (read-only, as the support role: ' +
        'SUPPORT_DATABASE_URL; without it the worker, DATABASE_URL, and the outbox as the relay, RELAY_DATABASE_URL); ' +
        "judged with the settings the day's cycle recorded; for a document still due, whether a cycle of the day met " +
        'its owner busy or failing, or stopped (from Temporal: without it, the database answers alone)',
    )
    .option('--owner <id>', "the investor's id (owner_user_id)", ownerId)
    .option('--document <id>', "a document's id: its owner is explained, this document shown", documentId)
    .option('--as-of <date>', 'the day to read the rule as of (YYYY-MM-DD, UTC; default today)', date)
    .option('--json', 'print the answer as JSON')
    .action(async (opts: { owner?: string; document?: string; asOf?: string; json?: boolean }, cmd: Command) => {
      if ((opts.owner === undefined) === (opts.document === undefined)) {
        cmd.error('error: give exactly one of --owner <id> or --document <id>', { exitCode: EXIT_CODES.usage });
      }
      const target = opts.owner !== undefined ? { ownerUserId: opts.owner } : { documentId: opts.document! };
      const answer = await explainCommand(config(), target, { asOfDate: opts.asOf ?? utcDate(new Date()) });
      if (opts.json) print(answer);
      else process.stdout.write(explanationText(answer));
    });

  const outbox = program
    .command('outbox')
    .description(
      'parked outbox rows: refused by Kafka RELAY_MAX_ATTEMPTS times (as the relay: RELAY_DATABASE_URL, else DATABASE_URL)',
    );
  outbox
    .command('parked')
    .description('list parked rows, oldest first: id, key, attempts, refusals, last error (never the payload)')
    .option('--limit <n>', 'how many (1-10000)', wholeNumberFrom(1, 10_000), 100)
    .action(async (opts: { limit: number }) => {
      print(await listParkedCommand(config(), opts));
    });
  outbox
    .command('retry')
    .description('un-park rows so the relay tries them again (fix the cause first, or they are parked again)')
    .argument('[id]', 'the parked row to retry', outboxRowId)
    .option('--all', 'every parked row')
    .action(async (id: string | undefined, opts: { all?: boolean }, cmd: Command) => {
      if (Boolean(id) === Boolean(opts.all)) {
        cmd.error('error: give either a row id or --all', { exitCode: EXIT_CODES.usage });
      }
      print(await retryParkedCommand(config(), id ? { id } : { all: true }));
    });

  return program;
}

async function main(): Promise<void> {
  await buildProgram(() => loadConfig()).parseAsync(process.argv);
}

if (require.main === module) {
  runMain('client', main, (err) => {
    // Commander has already printed its usage message (or the help).
    if (err instanceof CommanderError) return { code: err.exitCode, message: '' };
    if (err instanceof WorkflowFailedError) {
      const cause = err.cause ? `: ${err.cause.message}` : '';
      return { code: EXIT_CODES.failure, message: `error: ${err.message}${cause}` };
    }
    if (err instanceof ConfigError || err instanceof UnavailableError || !(err instanceof Error)) return undefined;
    return { code: EXIT_CODES.failure, message: `error: ${err.message}` };
  });
}

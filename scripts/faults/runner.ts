/**
 * The skeleton every cycle scenario shares, so a scenario module holds only its fault: a new seeded
 * database, a task queue and its first workers (optionally behind Toxiproxy); then the scenario's body
 * (the fault and the cycles); then every process it started stopped, the invariants checked, and the
 * database's pool closed whatever happens.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Proxy } from 'toxiproxy-node-client';
import type { CycleInput, CycleResult } from '../../src/domain/cycle';
import type { CycleWorkflow } from '../../src/workflows';
import { startToxiproxy } from '../toxiproxy';
import { newDb, newTaskQueue, proxyToPostgres, seed, startCycle, type FaultDb, type Harness } from './harness';
import { invariants, type JudgedAt } from './invariants';
import { startRelay, startWorker, versionServing, type Proc } from './processes';

/** One row of the report, before its timing. */
export interface ScenarioResult {
  size: string;
  detail: string;
  problems: string[];
}

export interface Scenario {
  id: string;
  name: string;
  /** What the report says was checked. */
  checks: string;
  run(h: Harness): Promise<ScenarioResult>;
}

/** The invariants every cycle scenario checks; I4 is added for those with a relay. */
const CORE_CHECKS = 'I1 I2 I3';

export interface CycleScenarioSpec {
  id: string;
  name: string;
  /** How many owners to seed, given `--owners`; default all of them. */
  owners?: (requested: number) => number;
  /** Workers started before the body runs (default 1). */
  workers?: number;
  /** Check I4 too: every outbox row on the topic of the stack's broker. */
  kafka?: boolean;
  /** Checks of the scenario's own, named in the report after the shared ones. */
  ownChecks?: string;
  /** Fills the database with `owners` owners' documents and returns how many; default {@link seed}. */
  seed?: (db: FaultDb, owners: number, h: Harness) => Promise<number>;
}

/** What a scenario's body works with. Every process it starts is stopped before the invariants run. */
export interface CycleRun {
  h: Harness;
  db: FaultDb;
  taskQueue: string;
  /** The workers started for the body, in start order. */
  workers: Proc[];
  startWorker(): Proc;
  startRelay(env?: Record<string, string>): Proc;
  startCycle(input?: CycleInput): Promise<WorkflowHandle<CycleWorkflow>>;
  /** Starts a cycle and waits for its result. */
  cycle(input?: CycleInput): Promise<CycleResult>;
}

/** What the body reports: the row's detail and its own problems, listed after the invariants'. */
export interface CycleOutcome {
  detail: string;
  problems?: string[];
  /** The day and thresholds the invariants are judged as of, when not the suite's. */
  judgedAt?: JudgedAt;
}

/** How the workers reach the database, and what the body gets to act on that path. */
type Connect<E> = (db: FaultDb) => Promise<{ workerEnv: Record<string, string>; extra: E }>;

const scenarioOf = (spec: CycleScenarioSpec, run: Scenario['run']): Scenario => ({
  id: spec.id,
  name: spec.name,
  checks: [CORE_CHECKS, spec.kafka ? 'I4' : '', spec.ownChecks ?? ''].filter(Boolean).join(' '),
  run,
});

/** A scenario that runs `body` on the shared skeleton (see the module comment). */
export function cycleScenario(spec: CycleScenarioSpec, body: (run: CycleRun) => Promise<CycleOutcome>): Scenario {
  const direct: Connect<object> = async () => ({ workerEnv: {}, extra: {} });
  return scenarioOf(spec, (h) => runCycleScenario(h, spec, direct, body));
}

/**
 * {@link cycleScenario} with every worker reaching PostgreSQL through a Toxiproxy proxy the body adds
 * toxics to (see {@link proxyToPostgres} for the session limits); Toxiproxy is stopped whatever happens.
 */
export function toxiproxyScenario(
  spec: CycleScenarioSpec,
  body: (run: CycleRun & { proxy: Proxy }) => Promise<CycleOutcome>,
): Scenario {
  return scenarioOf(spec, async (h) => {
    const toxiproxy = await startToxiproxy((l) => h.say(`[toxiproxy] ${l}`));
    try {
      const viaProxy: Connect<{ proxy: Proxy }> = async (db) => {
        const { proxy, workerEnv } = await proxyToPostgres(toxiproxy, db, spec.id);
        return { workerEnv, extra: { proxy } };
      };
      return await runCycleScenario(h, spec, viaProxy, body);
    } finally {
      await toxiproxy.stop();
    }
  });
}

async function runCycleScenario<E extends object>(
  h: Harness,
  spec: CycleScenarioSpec,
  connect: Connect<E>,
  body: (run: CycleRun & E) => Promise<CycleOutcome>,
): Promise<ScenarioResult> {
  let db: FaultDb | undefined;
  const started: Proc[] = [];
  try {
    db = await newDb(h, spec.id);
    const owners = spec.owners?.(h.owners) ?? h.owners;
    const docs = await (spec.seed ?? seed)(db, owners, h);
    const { workerEnv, extra } = await connect(db);
    const run = { ...cycleRun(h, db, started, workerEnv), ...extra };
    for (let i = 0; i < (spec.workers ?? 1); i++) run.workers.push(run.startWorker());
    const outcome = await body(run);
    await stopAll(started);
    const problems = await invariants(db, {
      ...outcome.judgedAt,
      kafka: spec.kafka ? h.topicReader : undefined,
    });
    return {
      size: `${owners} owners, ${docs} documents`,
      detail: outcome.detail,
      problems: [...problems, ...(outcome.problems ?? [])],
    };
  } finally {
    // After a failure too: a worker left running would keep polling its task queue for the rest of the suite.
    await stopAll(started);
    await db?.close();
  }
}

const stopAll = (procs: Proc[]) => Promise.all(procs.map((p) => p.kill('SIGTERM')));

function cycleRun(h: Harness, db: FaultDb, started: Proc[], workerEnv: Record<string, string>): CycleRun {
  const taskQueue = newTaskQueue();
  const track = (p: Proc) => {
    started.push(p);
    return p;
  };
  return {
    h,
    db,
    taskQueue,
    workers: [],
    startWorker: () => track(startWorker(h, db, taskQueue, workerEnv)),
    startRelay: (env) => track(startRelay(h, db, env)),
    // On the workers' version: started before it is current, a cycle would begin unversioned and move to it.
    startCycle: async (input) => {
      await versionServing(taskQueue);
      return startCycle(h, taskQueue, input);
    },
    cycle: async (input) => {
      await versionServing(taskQueue);
      return (await startCycle(h, taskQueue, input)).result();
    },
  };
}

/** Every scenario, in the order the suite runs them and `--only` names them (s8 is the closing scan). */
import type { Scenario } from '../runner';
import { badInput } from './bad-input';
import { cancelAndTimeLimit } from './cancel-and-time-limit';
import { chaos } from './chaos';
import { concurrentCycles } from './concurrent-cycles';
import { kafkaOutage } from './kafka-outage';
import { latency } from './latency';
import { pathCut } from './path-cut';
import { postgresRestart } from './postgres-restart';
import { temporalRestart } from './temporal-restart';
import { workerKilled } from './worker-killed';

export const SCENARIOS: Scenario[] = [
  workerKilled,
  postgresRestart,
  temporalRestart,
  concurrentCycles,
  cancelAndTimeLimit,
  kafkaOutage,
  badInput,
  pathCut,
  latency,
  chaos,
];

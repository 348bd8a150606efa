/** What the Web UI shows for a cycle before it runs: its static summary and details (markdown). */
import type { Config } from '../config';

/** Summary and details of the cycles the schedule starts (AsOf = each run's action time). */
export function scheduledCycleMetadata(config: Pick<Config, 'cycle'>): {
  staticSummary: string;
  staticDetails: string;
} {
  return {
    staticSummary: 'Document expiry reminders: scheduled cycle',
    staticDetails: cycleDetails("the schedule's action time (UTC date)", config.cycle.thresholdsDays),
  };
}

/** Summary and details of a cycle started by hand. */
export function manualCycleMetadata(
  asOf: string | undefined,
  config: Pick<Config, 'cycle'>,
): { staticSummary: string; staticDetails: string } {
  return {
    staticSummary: `Document expiry reminders: manual cycle as of ${asOf ?? 'now'}`,
    staticDetails: cycleDetails(asOf ?? 'the start of the cycle (UTC date)', config.cycle.thresholdsDays),
  };
}

function cycleDetails(asOf: string, thresholds: readonly number[]): string {
  return [
    `**AsOf:** ${asOf}`,
    `**Thresholds (days):** ${thresholds.join(', ')} (the worker's configuration unless the input overrides them)`,
    'Each owner activity is one PostgreSQL transaction: ledger markers plus at most one outbox event.',
    'Live progress is in the current details; the result lists the counts.',
  ].join('\n\n');
}

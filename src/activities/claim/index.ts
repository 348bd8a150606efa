/**
 * The claim (docs/DESIGN.md#page-claims): the activities that lock owners and queue their reminders, a
 * partition's pages (`claimPage`) and the workflow's busy retries (`remindOwners`). The way down is one way:
 * the activities (`claim-page.ts`, `remind-owners.ts`) → a page (`page.ts`) → a part's owners (`owner-groups.ts`)
 * → the statements (`sql/`), with the attempt (`attempt.ts`) and its account (`journal.ts`) beside them.
 */
import type { ClaimDeps } from './attempt';
import { claimPage } from './claim-page';
import { remindOwners } from './remind-owners';
import type { ClaimPageInput, RemindOwnersInput } from './types';

export type { ClaimDeps } from './attempt';
export type { ClaimPageInput, ClaimPageResult, RemindOwnersInput, RemindOwnersResult } from './types';

/** The claim's activities around the worker's pool, logger and metrics. */
export function createClaimActivities(deps: ClaimDeps) {
  return {
    claimPage: (input: ClaimPageInput) => claimPage(deps, input),
    remindOwners: (input: RemindOwnersInput) => remindOwners(deps, input),
  };
}

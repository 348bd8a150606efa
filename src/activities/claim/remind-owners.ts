/**
 * The `remindOwners` activity: the busy retries' side of the claim. The workflow retries owners its claims found
 * busy in groups (src/workflows/busy-retries.ts); each group is one part of its own, counted by its receipt.
 */
import * as otel from '@opentelemetry/api';
import { startAttempt, type ClaimDeps } from './attempt';
import { BUSY_RETRY_PART } from './journal';
import { claimPart } from './owner-groups';
import type { RemindOwnersInput, RemindOwnersResult } from './types';

/**
 * Claims the group's owners in one transaction, or, on a retry, counts what an earlier attempt committed. A
 * transient error fails the attempt; a permanent one, or the last attempt, claims the owners one by one.
 */
export async function remindOwners(deps: ClaimDeps, input: RemindOwnersInput): Promise<RemindOwnersResult> {
  const a = await startAttempt(deps, input);
  otel.trace
    .getActiveSpan()
    ?.setAttributes({ correlationId: input.jobRunId, owners: input.ownerUserIds.length, attempt: a.key.attempt });
  try {
    await claimPart(a, BUSY_RETRY_PART, input.ownerUserIds);
    return a.journal.result();
  } finally {
    a.stop();
  }
}

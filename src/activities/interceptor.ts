/**
 * One place where an activity's errors become Temporal's failures: whatever an activity throws (a database
 * error, a bug) leaves it through {@link toActivityFailure}, so the activities throw what they meet and no call
 * site converts by hand.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { toActivityFailure } from './errors';

/** The worker's activity interceptor that converts every activity's errors ({@link toActivityFailure}). */
export const activityFailures: ActivityInterceptorsFactory = () => ({
  inbound: {
    async execute(input, next) {
      try {
        return await next(input);
      } catch (err) {
        throw toActivityFailure(err);
      }
    },
  },
});

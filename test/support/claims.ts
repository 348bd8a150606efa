/** The claim's activities and statements as the tests drive them. */
import type { Info } from '@temporalio/activity';
import type pg from 'pg';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { activityFailures } from '../../src/activities';
import { claimLockedOwners, type ClaimParams } from '../../src/activities/claim/sql/claim-owners';
import { lockFreeOwners } from '../../src/activities/claim/sql/lock-owners';
import type { Queryable } from '../../src/db/pool';
import type { WonDocument } from '../../src/db/reminders';

/** The SDK's own lines about an activity that failed: the tests assert the failure itself. */
const sdkLogger = new DefaultLogger('ERROR');

/**
 * Runs activity `fn` in the SDK's activity context (attempt, activity id and run as `info` says), its errors
 * converted by the worker's own interceptor, as a worker runs it.
 */
export function runActivity<I, O>(fn: (input: I) => Promise<O>, input: I, info: Partial<Info> = {}): Promise<O> {
  return activityEnvironment(info).run(fn, input);
}

/** The SDK's activity context for `info`, with the worker's interceptor: a test that cancels the attempt keeps it. */
export function activityEnvironment(info: Partial<Info> = {}): MockActivityEnvironment {
  return new MockActivityEnvironment(info, { interceptors: [activityFailures], logger: sdkLogger });
}

/** What another claimer's transaction did for one owner. */
export interface OwnerClaim {
  ownerUserId: string;
  /** Another transaction held the owner, so this one left it alone. */
  busy: boolean;
  /** Documents this claim won the current-threshold marker for, in event order. */
  won: WonDocument[];
}

/**
 * The owner transaction as another claimer (a parallel cycle) runs it inside the caller's transaction: the free
 * owners' locks, then their claim, no receipt. An entry per distinct owner, in the order given.
 */
export async function claimOwners(
  db: Queryable,
  p: ClaimParams,
): Promise<{ owners: OwnerClaim[]; due: number; markersInserted: number; skippedAlreadyMarked: number }> {
  const requested = [...new Set(p.ownerUserIds)];
  const locked = new Set(await lockFreeOwners(db, requested));
  const claimed = await claimLockedOwners(db, { ...p, ownerUserIds: [...locked] });
  return {
    owners: requested.map((ownerUserId) => ({
      ownerUserId,
      busy: !locked.has(ownerUserId),
      won: claimed.won.get(ownerUserId) ?? [],
    })),
    // Due at the statement's snapshot: won, or won first by another transaction.
    due: claimed.remindersSent + claimed.skippedAlreadyMarked,
    markersInserted: claimed.markersInserted,
    skippedAlreadyMarked: claimed.skippedAlreadyMarked,
  };
}

/**
 * `pool`, with `before(text, values)` awaited before every statement sent through it or through a client it
 * hands out (it may reject the statement), and `after(text, values, result)` called with each result.
 */
export function observedPool(
  pool: pg.Pool,
  before: (text: string, values: unknown[]) => Promise<void> | void,
  after?: (text: string, values: unknown[], result: pg.QueryResult) => void,
): pg.Pool {
  const observe =
    (query: (...args: unknown[]) => Promise<unknown>) =>
    async (...args: unknown[]): Promise<unknown> => {
      const text = typeof args[0] === 'string' ? args[0] : '';
      const values = Array.isArray(args[1]) ? (args[1] as unknown[]) : [];
      await before(text, values);
      const result = await query(...args);
      after?.(text, values, result as pg.QueryResult);
      return result;
    };
  return new Proxy(pool, {
    get(target, prop) {
      if (prop === 'query') return observe(target.query.bind(target) as (...args: unknown[]) => Promise<unknown>);
      if (prop === 'connect') {
        return async () => {
          const client = await target.connect();
          const query = observe(client.query.bind(client) as (...args: unknown[]) => Promise<unknown>);
          return new Proxy(client, {
            get: (c, p) => (p === 'query' ? query : (Reflect.get(c, p, c) as unknown)),
          });
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Whether `text` opens a claim transaction of an attempt (and of which). */
export function claimBeginOf(text: string): { attempt: number } | undefined {
  const m = /^BEGIN[^]*enter_claim_attempt\([^]*, (\d+)\)$/i.exec(text);
  return m ? { attempt: Number(m[1]) } : undefined;
}

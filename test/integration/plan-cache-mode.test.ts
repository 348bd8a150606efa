/**
 * A database whose `plan_cache_mode` is `force_generic_plan` (a DBA's setting, not the job's): every session the
 * job opens asks for plans made for each statement's own values, so the claim is not planned once for any owners
 * (a generic plan of it took 3.1–3.6× as long on the backlog's data: bench/REPORT.md).
 */
import pg from 'pg';
import { createPool } from '../../src/db/pool';
import { useIntegration } from '../support/harness';

const stack = useIntegration('plan-cache-mode', { resetEachTest: false });

beforeAll(async () => {
  await stack.db.admin.query(`alter database ${stack.db.name} set plan_cache_mode = force_generic_plan`);
});

/**
 * How `db`'s session planned a statement with a parameter, run once: PostgreSQL counts a prepared statement's
 * generic and custom plans (the job's statements are unnamed, planned by the same rule each time they run).
 */
async function plansOf(db: pg.ClientBase): Promise<{ generic: number; custom: number }> {
  const name = `probe_${Math.random().toString(36).slice(2)}`;
  await db.query({
    name,
    text: 'select count(*) from pg_class where relname = $1',
    values: ['person_documents'],
  });
  const { rows } = await db.query<{ generic: string; custom: string }>(
    'select generic_plans::text as generic, custom_plans::text as custom from pg_prepared_statements where name = $1',
    [name],
  );
  return { generic: Number(rows[0].generic), custom: Number(rows[0].custom) };
}

test('the database really plans a session that does not ask otherwise once for any values', async () => {
  const raw = new pg.Client({ connectionString: stack.db.workerUrl });
  await raw.connect();
  try {
    expect((await raw.query('show plan_cache_mode')).rows[0].plan_cache_mode).toBe('force_generic_plan');
    expect(await plansOf(raw)).toEqual({ generic: 1, custom: 0 });
  } finally {
    await raw.end();
  }
});

test("the worker's and the relay's sessions plan each statement for its own values, whatever the database's setting", async () => {
  for (const url of [stack.db.workerUrl, stack.db.relayUrl]) {
    const pool = createPool({ connectionString: url, max: 1 });
    try {
      expect((await pool.query('show plan_cache_mode')).rows[0].plan_cache_mode).toBe('force_custom_plan');
      const client = await pool.connect();
      try {
        expect(await plansOf(client)).toEqual({ generic: 0, custom: 1 });
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  }
});

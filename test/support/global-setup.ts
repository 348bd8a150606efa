/**
 * Starts the local stack once for all integration test files (or adopts one named by the environment)
 * and bundles the workflow code once, so each test's worker starts in milliseconds. With
 * `STACK_PROFILE=production` (`npm run test:production`) the stack is the production profile's: TLS and
 * SCRAM on PostgreSQL, SASL_SSL on Kafka, the Temporal server with mTLS; the same test files run on it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { writeTestBundle } from './bundle';
import { STACK_ENV_KEYS, onProductionProfile } from './profile';
import { processAlive } from './wait';

const READY = 'STACK_READY ';

function startStackProcess(production: boolean): Promise<{ child: ChildProcess; env: Record<string, string> }> {
  const root = path.resolve(__dirname, '..', '..');
  const args = [require.resolve('tsx/cli'), 'scripts/stack/cli.ts', '--json', ...(production ? ['--production'] : [])];
  const child = spawn(process.execPath, args, {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffer = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const line = buffer.split('\n').find((l) => l.startsWith(READY));
      if (line) resolve({ child, env: JSON.parse(line.slice(READY.length)) });
    });
    child.on('exit', (code) => reject(new Error(`the local stack exited with code ${code} before it was ready`)));
  });
}

export default async function globalSetup(): Promise<void> {
  const stackPid = Number(process.env.STACK_PID);
  if (stackPid > 0 && !processAlive(stackPid))
    throw new Error(
      `This shell still has the variables of a stack that is gone (STACK_PID=${stackPid}): ` +
        'run eval "$(npm run -s stack -- stop)" to unset them, or start it again with --background',
    );
  if (!(process.env.STACK_DATABASE_ADMIN_URL && process.env.TEMPORAL_ADDRESS)) {
    const production = onProductionProfile();
    const { child, env } = await startStackProcess(production);
    (globalThis as { __stack?: ChildProcess }).__stack = child;
    Object.assign(process.env, env);
    // The production profile's own checks (test/production) start their own servers; they drop these.
    if (production) process.env[STACK_ENV_KEYS] = Object.keys(env).join(',');
  }
  // Built once for every test file.
  process.env.WORKFLOW_BUNDLE_PATH = await writeTestBundle();
}

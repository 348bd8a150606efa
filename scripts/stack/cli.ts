/**
 * `npm run stack`: starts the local stack and keeps it up until Ctrl-C, printing the variables that
 * point the worker, the client and the tests at it. With `--json` it prints one `STACK_READY {…}` line
 * instead (the test runner reads it).
 */
import { startStack } from './index';

async function main(): Promise<void> {
  const json = process.argv.includes('--json');
  const stack = await startStack({ log: (line) => process.stderr.write(`[stack] ${line}\n`) });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await stack.stop().catch((err: Error) => process.stderr.write(`[stack] stop failed: ${err.message}\n`));
    process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  // The test runner holds our stdin; when it goes away, so does the stack.
  if (json) process.stdin.on('end', stop).resume();
  if (json) {
    process.stdout.write(`STACK_READY ${JSON.stringify(stack.env)}\n`);
  } else {
    for (const [k, v] of Object.entries(stack.env)) process.stdout.write(`export ${k}='${v}'\n`);
    process.stdout.write('# stack is up; Ctrl-C stops it\n');
  }
}

main().catch((err: Error) => {
  process.stderr.write(`[stack] ${err.message}\n`);
  process.exit(1);
});

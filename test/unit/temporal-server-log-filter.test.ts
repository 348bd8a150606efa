import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stdoutToStderrLauncher } from '../../scripts/stack/temporal-cli';

// The dev server's launcher drops the ERROR lines that are no error and keeps every other line, real errors
// included, on stderr: a passing npm test prints no server ERROR line, a failing one still shows its cause.
test('the dev server launcher drops benign ERROR lines and keeps real errors, all on stderr', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'launcher-'));
  const previous = process.env.XDG_CACHE_HOME;
  process.env.XDG_CACHE_HOME = dir;
  try {
    // Lines a passing npm test printed (shortened), then real errors and the banner, which stay.
    const closing =
      'MultiOperation could not be executed: Update failed: workflow operation can not be applied because workflow is closing';
    const benign = [
      '{"level":"ERROR","msg":"Persistent store operation failure","error":"context canceled"}',
      '{"level":"ERROR","msg":"Operation failed with internal error.","error":"Failed to lock task queue. Error: context canceled","operation":"UpdateTaskQueue"}',
      '{"level":"ERROR","msg":"Persistent store operation failure","store-operation":"update-task-queue","error":"Failed to lock task queue. Error: context canceled"}',
      '{"level":"ERROR","msg":"deployment client error","error":"Worker Deployment not found","operation":"DescribeWorkerDeployment"}',
      `{"level":"ERROR","msg":"service failures","operation":"ExecuteMultiOperation","grpc_code":"ResourceExhausted","error":"${closing}"}`,
      `{"level":"ERROR","msg":"deployment client error","error":"${closing}","operation":"RegisterTaskQueueWorker"}`,
      `{"level":"ERROR","msg":"error while registering version","component":"matching-engine","error":"${closing}"}`,
    ];
    const kept = [
      '{"level":"ERROR","msg":"Persistent store operation failure","error":"disk full"}',
      '{"level":"ERROR","msg":"deployment client error","error":"permission denied"}',
      '{"level":"ERROR","msg":"service failures","error":"context deadline exceeded"}',
      'CLI 1.5.1 (Server 1.29.1)',
    ];
    const lines = [...benign, ...kept];
    const fake = path.join(dir, 'fake-temporal');
    fs.writeFileSync(fake, `#!/usr/bin/env bash\nprintf '%s\\n' ${lines.map((l) => `'${l}'`).join(' ')}\n`, {
      mode: 0o755,
    });
    const res = spawnSync(stdoutToStderrLauncher(fake), [], { encoding: 'utf8' });
    expect(res.status).toBe(0);
    expect(res.stdout).toBe('');
    expect(res.stderr.trim().split('\n')).toEqual(kept);
  } finally {
    if (previous === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = previous;
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

/** The workflow bundle built once per test run by a global setup, for every test file's workers. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildWorkflowBundle } from '../../src/temporal/workflow-bundle';
import { WORKFLOWS_PATH } from '../../src/temporal/worker';

/**
 * Builds the bundle production ships (src/temporal/workflow-bundle.ts) into a fresh temporary
 * directory and returns its path; {@link removeTestBundle} deletes it.
 */
export async function writeTestBundle(): Promise<string> {
  const code = await buildWorkflowBundle(WORKFLOWS_PATH);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-bundle-'));
  const codePath = path.join(dir, 'workflow-bundle.js');
  fs.writeFileSync(codePath, code);
  return codePath;
}

/** Deletes a bundle {@link writeTestBundle} wrote, with its directory. */
export function removeTestBundle(codePath: string | undefined): void {
  if (codePath) fs.rmSync(path.dirname(codePath), { recursive: true, force: true });
}

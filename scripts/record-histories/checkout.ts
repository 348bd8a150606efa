/**
 * The worker of another git revision, for `--at REV`: fixtures that must match what is deployed are
 * recorded with the deployed revision's workflow code, interceptors and activities, not with a working
 * tree that already holds the change under test.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { loadConfig } from '../../src/config';
import type { createWorker } from '../../src/temporal/worker';

const ROOT = path.resolve(__dirname, '..', '..');

/** The two functions the recorder takes from a revision: its worker factory and its configuration. */
export interface WorkerModules {
  createWorker: typeof createWorker;
  loadConfig: typeof loadConfig;
}

/**
 * `src/` of a git revision, extracted into a hidden directory of this repository (so its imports
 * resolve to this node_modules) and loaded through tsx: that revision's worker and configuration. The
 * caller removes `dir` when done.
 */
export function checkoutSource(rev: string, log: (line: string) => void): { dir: string; modules: WorkerModules } {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = path.join(ROOT, `.record-histories-${sha.slice(0, 12)}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir);
  const tar = path.join(dir, 'src.tar');
  execFileSync('git', ['archive', '--format=tar', '-o', tar, sha, 'src'], { cwd: ROOT });
  execFileSync('tar', ['-xf', tar, '-C', dir]);
  log(`recording with the worker of ${rev} (${sha.slice(0, 12)})`);
  /* eslint-disable @typescript-eslint/no-require-imports -- modules of another revision, found at run time */
  const modules: WorkerModules = {
    // Older revisions have the worker factory in src/worker.ts, newer ones in src/temporal/worker.ts.
    createWorker: require(
      fs.existsSync(path.join(dir, 'src', 'temporal', 'worker.ts'))
        ? path.join(dir, 'src', 'temporal', 'worker.ts')
        : path.join(dir, 'src', 'worker.ts'),
    ).createWorker,
    // Older revisions have the configuration in src/config.ts, newer ones in src/config/.
    loadConfig: require(
      fs.existsSync(path.join(dir, 'src', 'config.ts'))
        ? path.join(dir, 'src', 'config.ts')
        : path.join(dir, 'src', 'config', 'index.ts'),
    ).loadConfig,
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
  return { dir, modules };
}

/**
 * The worker's Worker Deployment Version (docs/SAFE-DEPLOYS.md): the deployment name from the configuration
 * and a build id that comes from the build, never from a person. The image build sets it
 * (TEMPORAL_WORKER_BUILD_ID from `--build-arg BUILD_ID`); a worker run from a checkout takes the commit.
 */
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from './errors';
import type { Config } from './types';

/** The checkout this file is in (from `src/config/` under tsx and from `dist/config/`). */
const CHECKOUT = path.resolve(__dirname, '..', '..');

/** What the worker runs: a change under these makes another build, a change elsewhere (tests, docs) does not. */
const BUILD_PATHS = ['src', 'package.json', 'package-lock.json', 'migrations'];

function git(root: string, args: string[]): string | undefined {
  const r = spawnSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  return r.status === 0 ? r.stdout : undefined;
}

/**
 * The build id of a git checkout: its commit (12 hex digits), and when what the worker runs differs from that
 * commit, `-dirty-` and a digest of the difference, so two different uncommitted trees are two versions.
 * @returns undefined when `root` is not a git checkout (or git is missing).
 */
export function checkoutBuildId(root: string = CHECKOUT): string | undefined {
  const commit = git(root, ['rev-parse', '--short=12', 'HEAD'])?.trim();
  if (!commit) return undefined;
  const diff = git(root, ['diff', 'HEAD', '--', ...BUILD_PATHS]) ?? '';
  const untracked = (git(root, ['ls-files', '--others', '--exclude-standard', '--', ...BUILD_PATHS]) ?? '')
    .split('\n')
    .filter(Boolean);
  if (!diff && untracked.length === 0) return commit;
  const digest = crypto.createHash('sha256').update(diff);
  for (const file of untracked.sort()) {
    digest.update(`\0${file}\0`);
    digest.update(fs.readFileSync(path.join(root, file)));
  }
  return `${commit}-dirty-${digest.digest('hex').slice(0, 8)}`;
}

/** A worker's deployment version: the deployment it belongs to and the build it runs. */
export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}

/**
 * The version this worker declares: TEMPORAL_WORKER_BUILD_ID when set, else the checkout's commit.
 * @throws ConfigError when neither is there (an image built without `--build-arg BUILD_ID`, run outside git).
 */
export function workerVersion(config: Pick<Config, 'temporal'>, root: string = CHECKOUT): WorkerVersion {
  const buildId = config.temporal.buildId ?? checkoutBuildId(root);
  if (!buildId) {
    throw new ConfigError([
      "TEMPORAL_WORKER_BUILD_ID=(unset): the worker's build id is unknown and " +
        `${root} is no git checkout to take it from; build the image with --build-arg BUILD_ID=<commit or tag> ` +
        '(docker compose passes BUILD_ID), or run the worker from a git checkout',
    ]);
  }
  return { deploymentName: config.temporal.deploymentName, buildId };
}

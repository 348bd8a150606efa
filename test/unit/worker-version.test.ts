/**
 * The worker's Worker Deployment Version: the deployment name from the configuration, the build id from the
 * build (TEMPORAL_WORKER_BUILD_ID) or the git checkout, and a refusal naming what to set when neither is there.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkoutBuildId, ConfigError, loadConfig, workerVersion } from '../../src/config';

let dir: string;
const git = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-version-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function commitOneFile(): string {
  git('init', '-q');
  fs.mkdirSync(path.join(dir, 'src'));
  fs.mkdirSync(path.join(dir, 'test'));
  fs.writeFileSync(path.join(dir, 'src', 'worker.ts'), 'export {};\n');
  fs.writeFileSync(path.join(dir, 'test', 'a.test.ts'), '\n');
  git('add', '.');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.org', 'commit', '-q', '-m', 'one');
  return git('rev-parse', '--short=12', 'HEAD');
}

describe('the worker version', () => {
  it('takes the deployment name from TEMPORAL_DEPLOYMENT_NAME (default expiry-reminder) and the build id the image set', () => {
    expect(workerVersion(loadConfig({ TEMPORAL_WORKER_BUILD_ID: 'abc' }), dir).deploymentName).toBe('expiry-reminder');
    expect(
      workerVersion(
        loadConfig({ TEMPORAL_DEPLOYMENT_NAME: 'reminders', TEMPORAL_WORKER_BUILD_ID: 'v2026.12.06' }),
        dir,
      ),
    ).toEqual({ deploymentName: 'reminders', buildId: 'v2026.12.06' });
  });

  it('refuses a deployment name with a dot and a build id with a space, naming each', () => {
    expect(() => loadConfig({ TEMPORAL_DEPLOYMENT_NAME: 'expiry.reminder', TEMPORAL_WORKER_BUILD_ID: 'a b' })).toThrow(
      ConfigError,
    );
    try {
      loadConfig({ TEMPORAL_DEPLOYMENT_NAME: 'expiry.reminder', TEMPORAL_WORKER_BUILD_ID: 'a b' });
    } catch (err) {
      const { problems } = err as ConfigError;
      expect(problems).toEqual([
        expect.stringMatching(/^TEMPORAL_DEPLOYMENT_NAME="expiry.reminder": expected a deployment name/),
        expect.stringMatching(/^TEMPORAL_WORKER_BUILD_ID="a b": expected the build's id/),
      ]);
    }
  });

  it('fails fast, saying what to set, when no build id was set and the code is no git checkout', () => {
    expect(() => workerVersion(loadConfig({}), dir)).toThrow(ConfigError);
    expect(() => workerVersion(loadConfig({}), dir)).toThrow(
      /TEMPORAL_WORKER_BUILD_ID=\(unset\).*--build-arg BUILD_ID/,
    );
  });

  it("takes a checkout's commit; a change to what the worker runs makes another build id, a change to a test does not", () => {
    const commit = commitOneFile();
    expect(checkoutBuildId(dir)).toBe(commit);
    fs.writeFileSync(path.join(dir, 'test', 'a.test.ts'), 'changed\n');
    expect(checkoutBuildId(dir)).toBe(commit);

    fs.writeFileSync(path.join(dir, 'src', 'worker.ts'), 'export const a = 1;\n');
    const edited = checkoutBuildId(dir);
    expect(edited).toMatch(new RegExp(`^${commit}-dirty-[0-9a-f]{8}$`));
    fs.writeFileSync(path.join(dir, 'src', 'new.ts'), 'export {};\n');
    const added = checkoutBuildId(dir);
    expect(added).toMatch(new RegExp(`^${commit}-dirty-[0-9a-f]{8}$`));
    expect(added).not.toBe(edited);
    expect(workerVersion(loadConfig({}), dir).buildId).toBe(added);
  });
});

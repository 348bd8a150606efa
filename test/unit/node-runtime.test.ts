import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const repoRoot = path.resolve(__dirname, '../..');

/**
 * The Node that `npm ci` puts at node_modules/.bin/node on this platform (scripts/node-runtime), or
 * undefined where no package of it exists (e.g. macOS: bring Node 24 yourself).
 */
function pinnedVersion(): string | undefined {
  const runtime = JSON.parse(fs.readFileSync(path.join(repoRoot, 'scripts/node-runtime/package.json'), 'utf8')) as {
    optionalDependencies: Record<string, string>;
  };
  return runtime.optionalDependencies[`node-${process.platform}-${process.arch}`];
}

/** `node -p process.version` as a script or tool would start it: by name, from PATH, or via a shebang. */
function versionOf(command: string, args: string[]): string {
  const result = spawnSync(command, args, { cwd: repoRoot, encoding: 'utf8', timeout: 30_000 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${result.stderr || String(result.error)}`);
  return result.stdout.trim();
}

describe('the Node the project runs on', () => {
  jest.setTimeout(40_000);
  const expected = pinnedVersion();

  it('the tests run on the pinned Node 24, not on the Node that ran npm', () => {
    // npm before 11.7 (npm 10 comes with Node 20 and 22) installs the runtime package without linking its
    // `node` bin: everything then runs on the machine's Node. Say what to do rather than compare versions.
    if (expected && !fs.existsSync(path.join(repoRoot, 'node_modules/.bin/node'))) {
      throw new Error(
        'node_modules/.bin/node is missing: npm before 11.7 does not link it; install npm 11.7 or newer (npm install -g npm@11) and run npm ci again',
      );
    }
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);
    if (expected) expect(process.version).toBe(`v${expected}`);
  });

  it('the processes the tests start (node from PATH, tsx by its shebang, process.execPath) run on the same Node', () => {
    const tsx = path.join(repoRoot, 'node_modules/.bin/tsx');
    expect(versionOf('node', ['-p', 'process.version'])).toBe(process.version);
    expect(versionOf(tsx, ['-e', 'console.log(process.version)'])).toBe(process.version);
    expect(versionOf(process.execPath, ['-p', 'process.version'])).toBe(process.version);
  });

  it('the native addons load on it: core-bridge (Node-API), @swc/core', () => {
    const load = "require('@temporalio/core-bridge'); require('@swc/core'); console.log(process.version)";
    expect(versionOf(process.execPath, ['-e', load])).toBe(process.version);
  });
});

describe("npm ci's first check (scripts/check-npm.cjs, the preinstall)", () => {
  /** The check as npm runs it under `agent` (npm's npm_config_user_agent). */
  const check = (agent: string | undefined) =>
    spawnSync(process.execPath, [path.join(repoRoot, 'scripts/check-npm.cjs')], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: { ...process.env, npm_config_user_agent: agent },
    });

  it.each([
    'npm/10.8.2 node/v20.17.0 linux x64',
    'npm/11.0.0 node/v22.9.0 linux x64',
    'npm/11.6.0 node/v24.0.0 linux x64',
  ])("stops an npm that would not link the project's Node (%s), naming the fix", (agent) => {
    const result = check(agent);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('needs npm 11.7 or newer');
    expect(result.stderr).toContain('npm install -g npm@11');
  });

  it.each([
    'npm/11.7.0 node/v20.17.0 linux x64',
    'npm/11.19.1 node/v20.20.2 linux x64',
    'npm/12.0.0 node/v24.1.0 linux x64',
    undefined,
  ])('the mirror: lets %s through', (agent) => {
    const result = check(agent);
    expect([result.status, result.stderr]).toEqual([0, '']);
  });
});

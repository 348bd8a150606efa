/**
 * Finds the `temporal` CLI (it carries the dev server and the Web UI), building it once with Go when
 * nothing else has it. Order: TEMPORAL_CLI_PATH, PATH, the Go bin directory, `go install`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cacheDir, writeExecutableScript } from './cache';

/** The newest CLI tag that `go install` can build (later tags carry a `replace` directive). */
const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

function executable(file: string | undefined): string | undefined {
  if (!file) return undefined;
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile() ? path.resolve(file) : undefined;
  } catch {
    return undefined;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const found = dir && executable(path.join(dir, name));
    if (found) return found;
  }
  return undefined;
}

function goBinDir(): string | undefined {
  if (!onPath('go')) return undefined;
  const res = spawnSync('go', ['env', 'GOBIN', 'GOPATH'], { encoding: 'utf8' });
  if (res.status !== 0) return undefined;
  const [gobin, gopath] = res.stdout.split('\n').map((s) => s.trim());
  return gobin || (gopath ? path.join(gopath.split(path.delimiter)[0], 'bin') : undefined);
}

/**
 * The absolute path of a usable `temporal` binary, building it with `go install` when needed, or
 * undefined when there is none and no Go toolchain to build it (the caller may then let the SDK
 * download one, which needs internet access).
 */
export function findOrBuildTemporalCli(log: (line: string) => void = () => {}): string | undefined {
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    const found = executable(fromEnv);
    if (!found) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv}: no executable file there`);
    return found;
  }
  const found = onPath('temporal') ?? executable(path.join(os.homedir(), 'go', 'bin', 'temporal'));
  if (found) return found;
  const binDir = goBinDir();
  if (!binDir) return undefined;
  const built = executable(path.join(binDir, 'temporal'));
  if (built) return built;
  log(`building the Temporal CLI: go install ${TEMPORAL_CLI_MODULE} (first run only, a few minutes)`);
  // stdout belongs to the caller (`npm run stack` prints only export lines there); Go reports on stderr.
  const res = spawnSync('go', ['install', TEMPORAL_CLI_MODULE], { stdio: ['ignore', process.stderr, 'inherit'] });
  if (res.status !== 0) {
    throw new Error(
      `go install ${TEMPORAL_CLI_MODULE} failed (exit ${res.status}); set TEMPORAL_CLI_PATH to an existing temporal binary`,
    );
  }
  return executable(path.join(binDir, 'temporal'));
}

/**
 * What the dev server logs at ERROR that is no error, as `grep -E` patterns:
 * - an operation given up because its caller went away (a test's worker stopped, the server unloading a task
 *   queue or shutting down): `context canceled`, in a store write, a task queue lock or an update;
 * - a worker deployment asked for before its first worker polled (`deployment current` waiting for pollers,
 *   the stranded-cycles gauge of a worker that has not polled yet) is `Worker Deployment not found`, the
 *   NotFound the caller expects and handles;
 * - a worker registering its version while the deployment's system workflow continues as new: `workflow is
 *   closing`, which the server's matching engine retries.
 * A passing `npm test` printed dozens of these, which a newcomer reads as failures.
 */
const BENIGN_SERVER_ERRORS = [
  '"level":"ERROR".*"error":"[^"]*context canceled"',
  '"msg":"deployment client error".*"error":"Worker Deployment not found"',
  '"level":"ERROR".*"error":"[^"]*workflow operation can not be applied because workflow is closing"',
];

/**
 * A launcher for `cliPath` whose stdout goes to stderr, without the {@link BENIGN_SERVER_ERRORS} lines. The SDK
 * starts the dev server with our stdout, where it prints its banner; `npm run stack` promises only `export`
 * lines there, so that `eval "$(npm run -s stack -- --background)"` works. The server is exec'd (the SDK stops
 * the process it started) and its output goes through a filter that ends with it. The launcher lives in the
 * cache, one per binary.
 */
export function stdoutToStderrLauncher(cliPath: string): string {
  const name = `temporal-${Buffer.from(cliPath).toString('base64url').slice(-40)}-filtered.sh`;
  const script =
    '#!/usr/bin/env bash\n' +
    `exec '${cliPath.replace(/'/g, `'\\''`)}' "$@" > >(grep --line-buffered -v -E '${BENIGN_SERVER_ERRORS.join('|')}' 1>&2) 2>&1\n`;
  return writeExecutableScript(cacheDir('launchers', name), script);
}

/**
 * The user's cache of things the stack and the tests fetch or build on first use (jars, launchers),
 * outside the repository: `$XDG_CACHE_HOME/expiry-reminder`, else `~/.cache/expiry-reminder`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A path under the cache, e.g. `cacheDir('kafka-4.4.0')`. Nothing is created. */
export function cacheDir(...parts: string[]): string {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'expiry-reminder', ...parts);
}

/**
 * Writes an executable script unless `file` already holds exactly `script`. Written to a private name
 * and renamed into place, so a process starting it meanwhile never runs half a script.
 */
export function writeExecutableScript(file: string, script: string): string {
  if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== script) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}`;
    fs.writeFileSync(tmp, script, { mode: 0o755 });
    fs.renameSync(tmp, file);
  }
  return file;
}

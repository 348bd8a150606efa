/**
 * The revisions a comparison runs, each in a folder of its own outside the clone:
 * `~/.cache/expiry-reminder/bench-compare/<full sha>/`, exported from git (`git archive`), with this
 * clone's node_modules linked in when the package-lock.json is the same, else installed there
 * (`npm ci`). The folder stays for the next comparison; the working tree (`this`) runs where it is.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { cacheDir } from '../../scripts/stack/cache';
import { THIS } from './summary';

/** The clone this runs from. */
const ROOT = path.resolve(__dirname, '..', '..');

export interface Revision {
  /** How tables and progress lines name it: `this`, or the sha's first 7 characters. */
  label: string;
  /** What `--compare` said. */
  name: string;
  /** The full sha; none for the working tree. */
  sha?: string;
  /** Where it runs. */
  dir: string;
}

const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();

/**
 * Resolves every name to a commit, before anything is built or started: an unknown name is refused
 * with its name. Two names of one commit run once.
 */
export function resolveRevisions(names: readonly string[]): Revision[] {
  const revisions: Revision[] = [];
  for (const name of names) {
    if (name === THIS) {
      revisions.push({ label: THIS, name, dir: ROOT });
      continue;
    }
    let sha: string;
    try {
      sha = execFileSync('git', ['rev-parse', '--verify', '--quiet', `${name}^{commit}`], {
        cwd: ROOT,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim();
    } catch {
      throw new Error(`--compare: "${name}" is no commit of this clone (git rev-parse found none)`);
    }
    if (revisions.some((r) => r.sha === sha)) continue;
    revisions.push({ label: sha.slice(0, 7), name, sha, dir: cacheDir('bench-compare', sha) });
  }
  return revisions;
}

/**
 * Makes the revision's folder ready to run its benchmark: exported and installed on first use (into a
 * private folder renamed into place, so an interrupted export is never taken for a finished one), and
 * its node_modules linked again when the clone it pointed at is gone.
 */
export function prepareRevision(r: Revision, say: (line: string) => void): void {
  if (!r.sha) return;
  if (!fs.existsSync(r.dir)) {
    say(`${r.label}: exporting ${r.sha} into ${r.dir}`);
    const tmp = `${r.dir}.tmp-${process.pid}`;
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.mkdirSync(tmp, { recursive: true });
    const archive = execFileSync('git', ['archive', r.sha], { cwd: ROOT, maxBuffer: 1 << 30 });
    execFileSync('tar', ['-x', '-C', tmp], { input: archive });
    installModules(tmp, r.label, say);
    fs.renameSync(tmp, r.dir);
  } else if (!fs.existsSync(path.join(r.dir, 'node_modules'))) {
    installModules(r.dir, r.label, say);
  }
}

/** This clone's node_modules, linked, when the lock file is the same; else `npm ci` in `dir`. */
function installModules(dir: string, label: string, say: (line: string) => void): void {
  const link = path.join(dir, 'node_modules');
  fs.rmSync(link, { recursive: true, force: true });
  const lock = (d: string) => fs.readFileSync(path.join(d, 'package-lock.json'), 'utf8');
  if (lock(dir) === lock(ROOT)) {
    fs.symlinkSync(fs.realpathSync(path.join(ROOT, 'node_modules')), link);
    return;
  }
  say(`${label}: package-lock.json differs from this clone's: npm ci`);
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 2, 2] });
}

/**
 * The revision's benchmark command: its own `npm run bench` script (`tsx <entry>`; the entry moved
 * from scripts/bench.ts to bench/cli.ts over time), run with the tsx of its node_modules.
 */
export function benchCommand(r: Revision): { file: string; args: string[] } {
  const pkg = JSON.parse(fs.readFileSync(path.join(r.dir, 'package.json'), 'utf8')) as {
    scripts?: Record<string, string>;
  };
  const script = pkg.scripts?.bench ?? '';
  const entry = /^tsx\s+(\S+)$/.exec(script.trim())?.[1];
  if (!entry) throw new Error(`${r.label}: its "bench" script is not "tsx <file>" (${script || 'none'})`);
  return { file: path.join(r.dir, 'node_modules', '.bin', 'tsx'), args: [entry] };
}

/** The commit the working tree is on, for the record. */
export function headSha(): string {
  return git('rev-parse', 'HEAD');
}

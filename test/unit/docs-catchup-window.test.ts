/**
 * The schedule's catch-up window as the docs state it: the code (src/operations/schedule.ts) sets it to the
 * scheduled cycle's execution timeout, 90 % of the polling interval, and an operator who reads "1 h" would
 * give up on a tick that Temporal still runs hours later.
 */
import fs from 'node:fs';
import path from 'node:path';
import { scheduledCycleTimeoutMs } from '../../src/domain/cycle';

const ROOT = path.resolve(__dirname, '..', '..');

function markdownFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(full);
    return e.name.endsWith('.md') ? [full] : [];
  });
}

/** Every sentence of the operator docs that names the catch-up window, with its file. */
function catchupSentences(): { file: string; sentence: string }[] {
  const files = [path.join(ROOT, 'README.md'), ...markdownFiles(path.join(ROOT, 'docs'))];
  return files.flatMap((file) =>
    fs
      .readFileSync(file, 'utf8')
      .replace(/\s+/g, ' ')
      .split(/(?<=[.!?])\s|\|/)
      .filter((s) => /catch-?up window/i.test(s))
      .map((sentence) => ({ file: path.relative(ROOT, file), sentence })),
  );
}

test('the docs give the catch-up window as the code sets it, 90 % of the interval, never a fixed hour', () => {
  expect(scheduledCycleTimeoutMs(24 * 3_600_000)).toBe(0.9 * 24 * 3_600_000);
  const sentences = catchupSentences();
  expect(sentences.length).toBeGreaterThan(3);
  const fixedHour = sentences.filter(({ sentence }) =>
    /catch-?up window,? (of )?(1 ?h|one hour|an hour)\b|the 1 h/i.test(sentence),
  );
  expect(fixedHour).toEqual([]);
});

/** The suite's report: a Markdown table on stdout, and optionally in a file between markers. */
import fs from 'node:fs';

export interface Row {
  scenario: string;
  repetitions: number;
  dataSize: string;
  checks: string;
  result: string;
  seconds: number;
  ok: boolean;
}

/** The rows as a Markdown table. */
export function table(rows: Row[]): string {
  return [
    '| scenario | run | data size | invariant checks | result | seconds |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) => `| ${r.scenario} | ${r.repetitions} | ${r.dataSize} | ${r.checks} | ${r.result} | ${r.seconds} |`,
    ),
  ].join('\n');
}

/**
 * Writes `markdown` (run with `command`) into `reportPath` between the `faults:start`/`faults:end`
 * markers, replacing the previous run there so the prose around it stays; appends it when the markers
 * are missing.
 */
export function writeReport(reportPath: string, command: string, markdown: string): void {
  const text = fs.existsSync(reportPath) ? fs.readFileSync(reportPath, 'utf8') : '';
  const block = `<!-- faults:start -->\nRun on ${new Date().toISOString()} with \`${command}\`:\n\n${markdown}\n<!-- faults:end -->`;
  fs.writeFileSync(
    reportPath,
    text.includes('<!-- faults:start -->')
      ? text.replace(/<!-- faults:start -->[\s\S]*<!-- faults:end -->/, block)
      : `${text}\n${block}\n`,
  );
}

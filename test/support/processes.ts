/** What `ps` shows of this machine's processes, read from /proc as an operator's tools read it. */
import fs from 'node:fs';

/** Every process's command line (its NUL-separated arguments joined by spaces), by pid. */
export function commandLines(): Map<number, string> {
  const lines = new Map<number, string>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      lines.set(Number(entry), fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' '));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return lines;
}

/**
 * Calls {@link commandLines} every `everyMs` until the returned function is called, which returns every
 * command line seen, each with the pid that had it: a tool that runs for a second is caught too.
 */
export function watchCommandLines(everyMs = 50): () => Map<string, number> {
  const seen = new Map<string, number>();
  const sample = () => {
    for (const [pid, line] of commandLines()) seen.set(line, pid);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return () => {
    clearInterval(timer);
    sample();
    return seen;
  };
}

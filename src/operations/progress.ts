/**
 * A live progress line on stderr while the operator waits for a cycle, read through the workflow's
 * `progress` query (never the database). stdout keeps only the JSON result.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { ZERO_COUNTS, addCounts, type CycleCounts, type CycleResult } from '../domain/cycle';
import { cycleProgressQuery, formatProgress, type CycleProgress } from '../domain/progress';

/** One running partition's progress, as `cycle status` lists it under its cycle. */
export interface PartitionProgress extends CycleCounts {
  workflowId: string;
  runs: number;
}

/**
 * A cycle's progress. A partitioned cycle counts the partitions that ended; each running partition is
 * asked for its own counts (listed in `running`), which are added, so the line covers the whole day.
 */
export async function cycleProgress(
  handle: WorkflowHandle,
): Promise<CycleProgress & { running?: PartitionProgress[] }> {
  const progress = await handle.query(cycleProgressQuery);
  if (!progress.partitionsRunning?.length) return progress;
  const running = await Promise.all(
    progress.partitionsRunning.map(async (workflowId) => {
      const p = await handle.client.getHandle(workflowId).query(cycleProgressQuery);
      const counts = { ...ZERO_COUNTS };
      addCounts(counts, p);
      return { workflowId, runs: p.runs, ...counts };
    }),
  );
  const total = { ...progress };
  for (const p of running) addCounts(total, p);
  return { ...total, running };
}

/** Where the line goes and how often it is read. */
export interface ProgressOptions {
  /** Defaults to process.stderr. */
  out?: { write(text: string): unknown; isTTY?: boolean };
  /** How often to ask the workflow (default 2 s). */
  intervalMs?: number;
}

/**
 * Waits for the cycle's result, showing its progress meanwhile. On a terminal the line is redrawn in
 * place; elsewhere (a log, CI) a line is written each time the progress changes. A query that fails (no
 * worker polling yet, the run continuing as new) is skipped: the next one will answer.
 */
export async function resultWithProgress(handle: WorkflowHandle, options: ProgressOptions = {}): Promise<CycleResult> {
  const out = options.out ?? process.stderr;
  const intervalMs = options.intervalMs ?? 2_000;
  const started = Date.now();
  let last = '';
  let drawn = false;
  let done = false;
  const show = async () => {
    try {
      const progress = await cycleProgress(handle);
      if (done) return;
      const line = formatProgress(progress, Date.now() - started);
      const changed = line.replace(/ · \d+ s/, '') !== last.replace(/ · \d+ s/, '');
      if (out.isTTY) {
        out.write(`\r\x1b[2K${line}`);
        drawn = true;
      } else if (changed) {
        out.write(`${line}\n`);
      }
      last = line;
    } catch {
      // Not answerable right now; try again at the next tick.
    }
  };
  // One query at a time (a tick that finds one in flight is skipped, so slow answers never queue up),
  // and the last one awaited before returning: the caller closes the connection next, and a query
  // still retrying on a closed channel would crash the process.
  let inFlight: Promise<void> | undefined;
  const tick = () => {
    if (inFlight) return;
    inFlight = show().finally(() => {
      inFlight = undefined;
    });
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  try {
    return await handle.result();
  } finally {
    done = true;
    clearInterval(timer);
    await inFlight;
    if (drawn) out.write('\n');
  }
}

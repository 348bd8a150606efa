/**
 * The prebuilt workflow bundle: `npm run build` writes `dist/workflows.bundle.js` next to the compiled
 * worker, which then loads it instead of bundling `src/workflows` with webpack at every start: that
 * bundling costs start-up time and memory the worker keeps for its whole life
 * (bench/REPORT-HISTORY.md#6-worker-memory-backlog-50k-owners).
 *
 *   node dist/temporal/workflow-bundle.js [out]   (default: dist/workflows.bundle.js)
 */
import fs from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { OTEL_WORKFLOW_INTERCEPTORS } from '../observability/tracing';

/** Where the compiled worker looks for a bundle built with it (`dist/workflows.bundle.js`). */
export const PREBUILT_BUNDLE_PATH = path.join(__dirname, '..', 'workflows.bundle.js');

/** The workflow code the worker runs, with the OpenTelemetry workflow interceptors, as one script. */
export async function buildWorkflowBundle(workflowsPath: string): Promise<string> {
  const noop = () => {};
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [OTEL_WORKFLOW_INTERCEPTORS],
    logger: {
      trace: noop,
      debug: noop,
      info: noop,
      warn: (m) => process.stderr.write(`${m}\n`),
      error: (m) => process.stderr.write(`${m}\n`),
      log: noop,
    },
  });
  return code;
}

/**
 * The bundle the worker should load: `WORKFLOW_BUNDLE_PATH` when set, else the one built next to the
 * compiled worker, else none (under tsx the worker bundles the source itself).
 */
export function workflowBundlePath(configured: string | undefined): string | undefined {
  if (configured) return configured;
  return fs.existsSync(PREBUILT_BUNDLE_PATH) ? PREBUILT_BUNDLE_PATH : undefined;
}

if (require.main === module) {
  const out = path.resolve(process.argv[2] ?? PREBUILT_BUNDLE_PATH);
  buildWorkflowBundle(require.resolve('../workflows'))
    .then((code) => {
      fs.writeFileSync(out, code);
      process.stdout.write(
        `workflow bundle: ${path.relative(process.cwd(), out)} (${Math.round(code.length / 1024)} KiB)\n`,
      );
    })
    .catch((err: Error) => {
      process.stderr.write(`workflow bundle failed: ${err.stack ?? err.message}\n`);
      process.exit(1);
    });
}

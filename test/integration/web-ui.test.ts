/**
 * The Web UI tells the story (issue 4): a cycle started the way operators start one, through a
 * schedule, is found in the dev server's Web UI by headless Chromium, which sees its summary, its
 * outcome (status and final current details) and its owner activities, and saves screenshots to
 * test-artifacts/ (web-ui-cycle.png: the User Metadata tab; web-ui-cycle-history.png: the timeline).
 *
 * Where UI 2.42.1 shows what: the status badge is in the workflow page's header; the static summary
 * and details and the current details are on the "User Metadata" tab, each rendered as markdown in an
 * iframe of its own, and the activity summaries are listed there under "Events with Metadata"; on the
 * History tab the summary appears in the Workflow Execution Started event and each claim activity
 * is labelled `claimPage • pages from <n>` in the timeline (the owners stay out of history). Current details come from a query the UI sends
 * when the tab opens, so a worker must be polling the task queue (the test worker is).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import type { FrameLocator, Page } from 'playwright-core';
import { utcDate } from '../../src/domain/dates';
import { SCHEDULED_WORKFLOW_ID, WORKFLOW_TYPE } from '../../src/domain/names';
import { scheduledCycleMetadata } from '../../src/temporal/ui-metadata';
import type { documentExpiryReminderCycle } from '../../src/workflows';
import { chromiumPath, launchBrowser, screenshotWholePage, type HeadlessBrowser } from '../support/browser';
import { insertDocuments } from '../support/data';
import { sleep } from '../support/wait';
import { testConfig } from '../support/stack';
import type { CycleWorkflow } from '../../src/workflows';
import { useIntegration } from '../support/harness';
import { devOnlyTest, productionOnlyTest } from '../support/profile';

const ARTIFACTS = path.resolve(__dirname, '..', '..', 'test-artifacts');
const SCREENSHOT = path.join(ARTIFACTS, 'web-ui-cycle.png');
const HISTORY_SCREENSHOT = path.join(ARTIFACTS, 'web-ui-cycle-history.png');
const PRODUCTION_SCREENSHOT = path.join(ARTIFACTS, 'web-ui-cycle-production.png');
/** How long one UI element may take to appear (the UI polls the server; the machine is small). */
const UI_TIMEOUT = 30_000;

const suffix = crypto.randomBytes(4).toString('hex');
const scheduleId = `web-ui-test-${suffix}`;
const taskQueue = `web-ui-test-${suffix}`;
const config = testConfig({ TEMPORAL_TASK_QUEUE: taskQueue });
const metadata = scheduledCycleMetadata(config);

const stack = useIntegration('web_ui', { worker: 'file', taskQueue, config: () => config, resetEachTest: false });
stack.trackSchedule(scheduleId);
let browser: HeadlessBrowser | undefined;
stack.onTeardown(async () => browser?.close());

function uiUrl(): string {
  const url = process.env.TEMPORAL_UI_URL;
  if (!url) {
    throw new Error('TEMPORAL_UI_URL is not set: the stack must start the Web UI (run the tests with npm test)');
  }
  return url.replace(/\/$/, '');
}

/**
 * Creates a schedule shaped like the real one (src/operations/schedule.ts: same action, metadata and policies) on
 * this file's task queue, triggers it as `schedule trigger` does, and returns the started workflow's id.
 */
async function triggerScheduledCycle(client: Client): Promise<string> {
  const handle = await client.schedule.create<typeof documentExpiryReminderCycle>({
    scheduleId,
    spec: {
      intervals: [{ every: config.schedule.intervalMs, offset: config.schedule.offsetMs }],
      // Its own ticks start tomorrow, so the only cycle in this test is the one the trigger starts.
      startAt: new Date(Date.now() + 24 * 3_600_000),
    },
    action: {
      type: 'startWorkflow',
      workflowType: WORKFLOW_TYPE,
      taskQueue,
      workflowId: `${SCHEDULED_WORKFLOW_ID}-web-ui-${suffix}`,
      args: [{}],
      ...metadata,
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1h', pauseOnFailure: false },
  });
  await handle.trigger(ScheduleOverlapPolicy.SKIP);
  const deadline = Date.now() + UI_TIMEOUT;
  for (;;) {
    const { info } = await handle.describe();
    const workflowId = (info.runningActions[0] ?? info.recentActions[0])?.workflow.workflowId;
    if (workflowId) return workflowId;
    if (Date.now() > deadline) throw new Error(`schedule ${scheduleId} started no cycle within ${UI_TIMEOUT} ms`);
    await sleep(100);
  }
}

/** The markdown iframe under a User Metadata heading ("Summary", "Details", "Current Details"). */
function markdownUnder(page: Page, heading: string): FrameLocator {
  return page
    .locator(`xpath=//h3[normalize-space()="${heading}"]/ancestor::div[.//iframe][1]//iframe[@title="output"]`)
    .first()
    .contentFrame();
}

/**
 * What both profiles' tests do first: three documents due, a cycle through the schedule run to its end, and
 * the operator's way in, the UI's workflow list filtered to this schedule's cycles, newest first, with that
 * cycle as its only row, completed.
 */
async function cycleInTheList() {
  await chromiumPath(); // fails at once, saying what is missing, when there is no browser
  const asOfDate = utcDate(new Date());
  await insertDocuments(stack.db.admin, asOfDate, [{ daysLeft: 30 }, { daysLeft: 7 }, { daysLeft: 0 }]);

  const workflowId = await triggerScheduledCycle(stack.client);
  const result = await stack.client.workflow.getHandle<CycleWorkflow>(workflowId).result();
  expect(result).toEqual(expect.objectContaining({ status: 'completed', remindersSent: 3, ownersNotified: 3 }));

  browser = await launchBrowser();
  const { page } = browser;
  page.setDefaultTimeout(UI_TIMEOUT);
  fs.mkdirSync(ARTIFACTS, { recursive: true });

  const query = `WorkflowType="${WORKFLOW_TYPE}" AND TemporalScheduledById="${scheduleId}"`;
  await page.goto(`${uiUrl()}/namespaces/default/workflows?query=${encodeURIComponent(query)}`);
  const rows = page.getByTestId('workflows-summary-configurable-table-row');
  const latest = rows.first();
  const link = latest.getByRole('link', { name: workflowId, exact: true });
  await link.waitFor();
  await expect(rows.count()).resolves.toBe(1);
  await latest.getByText('Completed', { exact: true }).waitFor();
  return { page, link, workflowId, resultAsOfDate: result.asOf.slice(0, 10) };
}

devOnlyTest(
  'the Web UI shows the latest scheduled cycle with its summary, outcome and owner activities',
  'its selectors are UI 2.42.1’s (the dev server’s); the profile’s ui-server v2.54.1 opens a cycle on ' +
    '/timeline and lays out its metadata otherwise (the test below checks what both show)',
  async () => {
    const { page, link, workflowId, resultAsOfDate } = await cycleInTheList();

    // History tab: outcome in the header, the summary in the start event, a timeline bar for the claim of
    // the day's pages, named by its first page.
    await link.click();
    await page.waitForURL(/\/history$/);
    await page.getByTestId('workflow-id-heading').getByText(workflowId).waitFor();
    await page.locator('header').getByText('Completed', { exact: true }).first().waitFor();
    await page.getByText(metadata.staticSummary, { exact: true }).first().waitFor();
    await page
      .getByText(/^claimPage • pages from 1$/)
      .first()
      .waitFor();
    await screenshotWholePage(page, HISTORY_SCREENSHOT);

    // User Metadata tab: static summary and details, final current details, the owner activities.
    await page.getByTestId('user-metadata-tab').click();
    await page.waitForURL(/\/user-metadata$/);
    await markdownUnder(page, 'Summary').getByText(metadata.staticSummary, { exact: true }).waitFor();
    const details = markdownUnder(page, 'Details');
    await details.locator('strong', { hasText: 'AsOf:' }).waitFor();
    await details.getByText(/the schedule.s action time/).waitFor();
    await details.locator('strong', { hasText: 'Thresholds (days):' }).waitFor();

    const current = markdownUnder(page, 'Current Details');
    // "**completed** · AsOf … reminders 3 …", rendered as markdown: the status in bold.
    await current.locator('strong', { hasText: /^completed$/ }).waitFor();
    const currentText = (await current.locator('body').innerText()).replace(/\s+/g, ' ').trim();
    expect(currentText).toMatch(
      new RegExp(
        `^completed · AsOf ${resultAsOfDate} \\(scheduled \\d{4}-\\d{2}-\\d{2}\\) · thresholds 30, 7, 1, 0 · `,
      ),
    );
    expect(currentText).toContain('owners 3 done, 0 busy, 0 failed · reminders 3 · run 1');

    const withMetadata = page.locator(
      'xpath=//h3[normalize-space()="Events with Metadata"]/ancestor::div[.//p[normalize-space()="Activity"]][1]',
    );
    await withMetadata.getByText('pages from 1', { exact: true }).waitFor();
    await expect(withMetadata.getByText('Completed', { exact: true }).count()).resolves.toBe(1);

    await screenshotWholePage(page, SCREENSHOT);
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
  },
);

productionOnlyTest(
  'the UI server lists the scheduled cycle and opens it with its outcome, over mTLS to the frontend',
  async () => {
    const { page, link, workflowId } = await cycleInTheList();
    await link.click();
    await page.waitForURL(/\/(history|timeline)$/);
    await page.getByTestId('workflow-id-heading').getByText(workflowId).waitFor();
    await page.locator('header').getByText('Completed', { exact: true }).first().waitFor();
    await screenshotWholePage(page, PRODUCTION_SCREENSHOT);
    expect(fs.statSync(PRODUCTION_SCREENSHOT).size).toBeGreaterThan(10_000);
  },
);

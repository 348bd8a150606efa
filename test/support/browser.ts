/**
 * Headless Chromium for tests that look at a page the way a person does: playwright-core driving a
 * Chromium that `npm ci` already brought. playwright-core never downloads a browser (the network here
 * reaches package registries only), so the browser is, in this order: CHROMIUM_PATH, Debian's
 * `chromium` when installed, else the headless build inside the `@sparticuz/chromium` dev dependency,
 * unpacked on first use into the temp folder (it carries its own libraries and runs as any user).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { errorOf } from '../../src/domain/failures';

const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * The package is ESM with a CommonJS build; its types describe the ESM side only, so this file (CommonJS,
 * like the rest of the tests) loads the CommonJS build with the one function it uses.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sparticuz = require('@sparticuz/chromium') as { executablePath(): Promise<string> };

/**
 * Flags for a closed network: without the background-networking ones Chromium keeps dialing out
 * (component updates, sync, QUIC) and the sandbox refuses the connections. `--no-sandbox` because the
 * tests run as root.
 */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The browser binary to use, or an error that says what is wrong (the test fails; it never skips). */
export async function chromiumPath(): Promise<string> {
  const fromEnv = process.env.CHROMIUM_PATH;
  if (fromEnv) {
    if (isExecutable(fromEnv)) return fromEnv;
    throw new Error(`CHROMIUM_PATH=${fromEnv} is not an executable file; unset it or point it at a Chromium binary`);
  }
  if (isExecutable(DEFAULT_CHROMIUM_PATH)) return DEFAULT_CHROMIUM_PATH;
  try {
    // Sets LD_LIBRARY_PATH in this process for the libraries it unpacks; the browser inherits it.
    return await sparticuz.executablePath();
  } catch (err) {
    throw new Error(
      `No Chromium: none at ${DEFAULT_CHROMIUM_PATH}, and @sparticuz/chromium could not unpack its own ` +
        `(${errorOf(err).message}). Run npm ci, install Debian's chromium, or set CHROMIUM_PATH.`,
    );
  }
}

export interface HeadlessBrowser {
  context: BrowserContext;
  page: Page;
  /** Closes the browser and removes its profile directory; safe to call twice. */
  close(): Promise<void>;
}

/** Launches headless Chromium with a fresh profile and opens one page. */
export async function launchBrowser(
  options: { viewport?: { width: number; height: number }; timeoutMs?: number } = {},
): Promise<HeadlessBrowser> {
  const executablePath = await chromiumPath();
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'expiry-reminder-chromium-'));
  let context: BrowserContext;
  try {
    // A persistent context is the way playwright takes a profile directory of our choosing.
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: options.viewport ?? { width: 1600, height: 1000 },
      timeout: options.timeoutMs ?? 60_000,
    });
  } catch (err) {
    fs.rmSync(userDataDir, { recursive: true, force: true });
    throw new Error(`Chromium (${executablePath}) did not start: ${errorOf(err).message}`);
  }
  const page = context.pages()[0] ?? (await context.newPage());
  let closed = false;
  return {
    context,
    page,
    close: async () => {
      if (closed) return;
      closed = true;
      await context.close().catch(() => {});
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * How far the page's main scrollers scroll (browser-side code, as text: the project compiles without the
 * DOM library). Only visible scrollers nearly as tall as the viewport count: not menus, editors or
 * tables with scrollbars of their own.
 */
const MAIN_SCROLL_OVERFLOW = `(() => {
  let extra = 0;
  for (const el of document.querySelectorAll('*')) {
    const style = getComputedStyle(el);
    if (!/(auto|scroll)/.test(style.overflowY) || style.visibility === 'hidden' || style.opacity === '0') continue;
    if (el.getBoundingClientRect().height < window.innerHeight * 0.9) continue;
    extra = Math.max(extra, el.scrollHeight - el.clientHeight);
  }
  return Math.ceil(extra);
})()`;

/**
 * A screenshot of the whole page. Single-page apps such as the Temporal Web UI scroll an inner element
 * (the UI's `#content-wrapper`), not the document, so playwright's `fullPage` stops at the viewport;
 * this grows the viewport until the visible, page-sized scrollers no longer scroll (at most `maxHeight`
 * pixels), takes the screenshot, and puts the viewport back.
 */
export async function screenshotWholePage(page: Page, file: string, maxHeight = 8_000): Promise<void> {
  const viewport = page.viewportSize() ?? { width: 1600, height: 1000 };
  let height = viewport.height;
  for (let round = 0; round < 4 && height < maxHeight; round++) {
    const overflow = await page.evaluate<number>(MAIN_SCROLL_OVERFLOW);
    if (overflow <= 0) break;
    height = Math.min(maxHeight, height + overflow);
    await page.setViewportSize({ width: viewport.width, height });
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    await page.screenshot({ path: file, fullPage: true });
  } finally {
    if (height !== viewport.height) await page.setViewportSize(viewport);
  }
}

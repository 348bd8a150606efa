/**
 * Headless Chromium for tests that look at a page the way a person does: playwright-core driving
 * Debian's `chromium` (playwright-core never downloads a browser; `scripts/install-chromium.sh`
 * installs the package). CHROMIUM_PATH names another binary.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Flags for a closed network: without the background-networking ones Chromium keeps dialing out
 * (component updates, sync, QUIC) and the sandbox refuses the connections. `--no-sandbox` because the
 * tests run as root.
 */
export const CHROMIUM_ARGS = [
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

/** The browser binary to use, or an error that says how to get it (the test fails; it never skips). */
export function chromiumPath(): string {
  const fromEnv = process.env.CHROMIUM_PATH;
  const candidate = fromEnv || DEFAULT_CHROMIUM_PATH;
  try {
    fs.accessSync(candidate, fs.constants.X_OK);
    return candidate;
  } catch {
    throw new Error(
      fromEnv
        ? `CHROMIUM_PATH=${fromEnv} is not an executable file; unset it or point it at a Chromium binary`
        : `No Chromium at ${DEFAULT_CHROMIUM_PATH}: run \`bash scripts/install-chromium.sh\` ` +
            '(installs Debian\'s chromium package; needs root), or set CHROMIUM_PATH to a Chromium binary',
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
  const executablePath = chromiumPath();
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
    throw new Error(`Chromium (${executablePath}) did not start: ${(err as Error).message}`);
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

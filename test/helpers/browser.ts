import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext } from 'playwright-core';
import { packageRoot } from '../../src/util/paths.js';

/** Debian's chromium, which `.ci/run` installs; pages are tested in it through playwright-core. */
export const CHROMIUM = process.env.FERRY_TEST_CHROMIUM ?? '/usr/bin/chromium';

/** Where screenshots are kept (the CI artefacts); not in git. */
export const SCREENSHOT_DIR = join(packageRoot, 'test-artifacts', 'screenshots');

/** A normal desktop browser's user agent: headless Chrome names itself HeadlessChrome, which bot filters refuse. */
export const DESKTOP_USER_AGENT =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

interface SkippableTest {
  skip(message: string): void;
  teardown(fn: () => unknown): void;
}

/**
 * A headless chromium for one test, closed at its teardown; null (after one clear skip line) where chromium is not
 * installed, so `npm test` passes on a bare machine.
 */
export async function launchBrowser(t: SkippableTest, o: { fakeMedia?: boolean } = {}): Promise<Browser | null> {
  if (!existsSync(CHROMIUM)) {
    t.skip(`chromium is not installed at ${CHROMIUM} (apt-get install chromium; .ci/run does): browser test skipped`);
    return null;
  }
  const { chromium } = await import('playwright-core');
  const args = ['--headless', '--disable-gpu', '--disable-dev-shm-usage'];
  // A fake microphone (a beep each second) granted without asking, and WebRTC over loopback, for call tests.
  if (o.fakeMedia) args.push('--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', '--allow-loopback-in-peer-connection', '--autoplay-policy=no-user-gesture-required');
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args, timeout: 60_000 });
  t.teardown(() => browser.close());
  return browser;
}

/** A context with a normal desktop user agent (counted as a person, not a bot). */
export function humanContext(browser: Browser): Promise<BrowserContext> {
  return browser.newContext({ userAgent: DESKTOP_USER_AGENT, viewport: { width: 1280, height: 800 } });
}

/** The path for a named screenshot, its folder created. */
export function screenshotPath(name: string): string {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  return join(SCREENSHOT_DIR, `${name}.png`);
}

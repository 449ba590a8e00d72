import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Browser-test helpers: Debian's Chromium (never a downloaded browser) driven by playwright-core,
 * the sign-in every test starts with, axe-core, and screenshots into docs/screenshots/.
 */
export const CHROMIUM = process.env.WORKROOM_CHROMIUM ?? '/usr/bin/chromium';
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/**
 * Where screenshots go. The committed ones in docs/screenshots/ are made only by `npm run screenshots`
 * (web/scripts/screenshots.ts, a seeded demo workspace), which sets WORKROOM_SCREENSHOTS_DIR; a test
 * run takes its screenshots (they still check that each screen renders) into a temporary directory.
 */
export const DOCS_SCREENSHOTS = join(ROOT, 'docs', 'screenshots');
export const SCREENSHOTS =
  process.env.WORKROOM_SCREENSHOTS_DIR ?? join(tmpdir(), 'workroom-test-screenshots');
export const WEB_DIST = join(ROOT, 'web', 'dist');

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export async function newContext(
  browser: Browser,
  opts: { dark?: boolean; phone?: boolean; clipboard?: boolean } = {},
): Promise<BrowserContext> {
  const ctx = await browser.newContext({
    viewport: opts.phone ? PHONE : DESKTOP,
    deviceScaleFactor: 1,
    colorScheme: opts.dark ? 'dark' : 'light',
    ...(opts.phone ? { isMobile: true, hasTouch: true } : {}),
  });
  if (opts.clipboard) await ctx.grantPermissions(['clipboard-read', 'clipboard-write']);
  return ctx;
}

/** Signs in through the form and waits until the app is there. */
export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(baseUrl);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not restrict.
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(o: unknown): Promise<{ violations: AxeViolation[] }> } })
      .axe;
    const r = await axe.run({ resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target })),
    }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0)); // a sticky bar is drawn where the page is scrolled
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: name.startsWith('admin') });
}

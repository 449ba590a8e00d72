import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../../server/test/helpers/server.js';
import { expectStatus } from '../../server/test/helpers/client.js';
import { World, type UserHandle } from '../../server/test/helpers/world.js';
import { launch, newContext, screenshot, seriousViolations, signIn } from './browser.js';

/**
 * Slack-compatible incoming webhooks in real Chromium (issue 20, point 3): an org admin creates one in the
 * admin screen (its URL shown once), Alertmanager's and Grafana's Slack payloads are posted to URLs, and
 * the channel shows them as readable messages (screenshot docs/screenshots/incoming-webhooks-alerts.png).
 */
let server: TestServer;
let browser: Browser;
let admin: UserHandle;
let channel: string;

const ALERTMANAGER = {
  username: 'Alertmanager',
  attachments: [
    {
      title: '[FIRING:1] InstanceDown (node-exporter 10.0.0.7:9100 critical)',
      title_link: 'http://alertmanager.example.com:9093/#/alerts?receiver=slack-notifications',
      text:
        '*Alert:* Instance 10.0.0.7:9100 down - `critical`\n' +
        '*Description:* 10.0.0.7:9100 of job node-exporter has been down for more than 5 minutes.\n' +
        '<http://prometheus.example.com:9090/graph?g0.expr=up+%3D%3D+0|Source>',
      fallback: '[FIRING:1] InstanceDown (node-exporter 10.0.0.7:9100 critical)',
      color: 'danger',
      mrkdwn_in: ['fallback', 'pretext', 'text'],
      actions: [{ type: 'button', text: 'Runbook', url: 'https://runbooks.example.com/InstanceDown' }],
    },
  ],
};
const GRAFANA = {
  username: 'Grafana',
  icon_url: 'https://grafana.com/static/assets/img/fav32.png',
  attachments: [
    {
      title: '[RESOLVED] HighCPU Production (web-01)',
      title_link: 'https://grafana.example.com/alerting/list',
      text: '**Resolved**\n\nValue: B=41.2\nLabels:\n - alertname = HighCPU\n - instance = web-01\n',
      fallback: '[RESOLVED] HighCPU Production (web-01)',
      footer: 'Grafana v10.4.1',
      color: '#36a64f',
      ts: 1732700000,
    },
  ],
};

beforeAll(async () => {
  server = await startTestServer();
  browser = await launch();
  const world = await World.create(server.url);
  admin = (await world.org()).admin;
  channel = await world.channel(admin.api, { name: 'alerts' });
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('incoming webhooks', () => {
  it('are created in the admin screen, and Alertmanager’s and Grafana’s alerts read well in the channel', async () => {
    const ctx = await newContext(browser, { clipboard: true });
    const page = await ctx.newPage();
    await signIn(page, server.url, admin.email, 'user-password-1');
    await page.goto(`${server.url}/admin`);
    const panel = page.getByRole('region', { name: 'Incoming webhooks' });
    await panel.getByText('No incoming webhooks yet.').waitFor();
    const form = panel.getByRole('form', { name: 'New incoming webhook' });
    await form.getByLabel('Name', { exact: true }).fill('Alertmanager');
    await form.getByLabel('Channel').selectOption({ label: '#alerts' });
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const url = await panel.getByLabel('Webhook URL').inputValue();
    expect(url).toMatch(/\/api\/incoming-webhooks\/[0-9a-f-]{36}\/wrih_[0-9a-f]{64}$/);
    await panel.getByRole('row').filter({ hasText: 'Alertmanager' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'admin-incoming-webhooks');

    // Posted as Alertmanager and Grafana post them (the URL on this test server).
    const local = (u: string) => `${server.url}${new URL(u).pathname}`;
    const post = async (u: string, body: unknown) =>
      (
        await fetch(local(u), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).text();
    expect(await post(url, ALERTMANAGER)).toBe('ok');
    const grafana = expectStatus(
      await admin.api.post('/api/incoming-webhooks', {
        name: 'Grafana',
        channel_id: channel,
        allow_overrides: false,
      }),
      201,
    );
    expect(await post(grafana.url, GRAFANA)).toBe('ok');

    await page.goto(`${server.url}/#/channel/${channel}`);
    await page.getByRole('textbox', { name: 'Message' }).waitFor();
    const alert = page.getByRole('article').filter({ hasText: 'InstanceDown' });
    await alert.waitFor();
    // The title is a link to the alert, the mrkdwn bold is bold, the Source link a link.
    await alert.getByRole('link', { name: /\[FIRING:1\] InstanceDown/ }).waitFor();
    expect(await alert.getByRole('link', { name: 'Source' }).getAttribute('href')).toContain(
      'prometheus.example.com',
    );
    expect(await alert.locator('strong', { hasText: 'Alert:' }).count()).toBeGreaterThan(0);
    const resolved = page.getByRole('article').filter({ hasText: 'HighCPU' });
    await resolved.getByRole('link', { name: /\[RESOLVED\] HighCPU/ }).waitFor();
    expect(await resolved.textContent()).toContain('🟢');
    expect(await resolved.textContent()).toContain('Grafana v10.4.1');
    await screenshot(page, 'incoming-webhooks-alerts');
    await ctx.close();
  });
});

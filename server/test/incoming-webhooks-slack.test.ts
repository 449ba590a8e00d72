import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus } from './helpers/client.js';
import { FrozenClock } from './helpers/frozen-clock.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type UserHandle } from './helpers/world.js';

/**
 * Slack-compatible incoming webhooks (issue 20, point 3) over real HTTP: management (bad input, missing
 * permission, another organization's container and webhook look like 404), and posting Slack's payloads as
 * Alertmanager's and Grafana's Slack notifiers send them (written from their documentation and default
 * templates), Block Kit, our own shape, template mode with a GitHub push event, Slack's error answers,
 * revocation, and the body limit.
 */

/** Alertmanager's slack_configs with its default templates (one firing alert, send_resolved on). */
const ALERTMANAGER = {
  channel: '#alerts',
  username: 'Alertmanager',
  icon_emoji: ':fire:',
  icon_url: '',
  link_names: false,
  attachments: [
    {
      title: '[FIRING:1] InstanceDown (node-exporter 10.0.0.7:9100 critical)',
      title_link: 'http://alertmanager.example.com:9093/#/alerts?receiver=slack-notifications',
      pretext: '',
      text:
        '*Alert:* Instance 10.0.0.7:9100 down - `critical`\n' +
        '*Description:* 10.0.0.7:9100 of job node-exporter has been down for more than 5 minutes.\n' +
        '*Details:*\n  • *alertname:* `InstanceDown`\n  • *instance:* `10.0.0.7:9100`\n' +
        '<http://prometheus.example.com:9090/graph?g0.expr=up+%3D%3D+0|Source>',
      fallback:
        '[FIRING:1] InstanceDown (node-exporter 10.0.0.7:9100 critical) | http://alertmanager.example.com:9093/#/alerts?receiver=slack-notifications',
      callback_id: '',
      footer: '',
      color: 'danger',
      mrkdwn_in: ['fallback', 'pretext', 'text'],
      actions: [
        { type: 'button', text: 'Runbook :green_book:', url: 'https://runbooks.example.com/InstanceDown' },
        {
          type: 'button',
          text: 'Silence :no_bell:',
          url: 'http://alertmanager.example.com:9093/#/silences/new?filter=%7Balertname%3D%22InstanceDown%22%7D',
        },
      ],
    },
  ],
};

/** Grafana alerting's Slack contact point with its default title and message templates. */
const GRAFANA = {
  username: 'Grafana',
  icon_url: 'https://grafana.com/static/assets/img/fav32.png',
  attachments: [
    {
      title: '[FIRING:1] HighCPU Production (web-01)',
      title_link: 'https://grafana.example.com/alerting/list',
      text:
        '**Firing**\n\nValue: B=97.3\nLabels:\n - alertname = HighCPU\n - grafana_folder = Production\n - instance = web-01\n' +
        'Annotations:\n - summary = CPU above 90% for 5m\n' +
        'Source: https://grafana.example.com/alerting/grafana/cpu1/view\n' +
        'Silence: https://grafana.example.com/alerting/silence/new?alertmanager=grafana&matcher=alertname%3DHighCPU\n',
      fallback: '[FIRING:1] HighCPU Production (web-01)',
      footer: 'Grafana v10.4.1',
      footer_icon: 'https://grafana.com/static/assets/img/fav32.png',
      color: '#D63232',
      ts: 1732700000,
      mrkdwn_in: ['pretext'],
    },
  ],
};

/** GitHub's push event (trimmed to the fields a template uses, and a few it does not). */
const GITHUB_PUSH = {
  ref: 'refs/heads/main',
  before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
  after: '0000000000000000000000000000000000000001',
  repository: {
    id: 1296269,
    full_name: 'octo-org/octo-repo',
    html_url: 'https://github.com/octo-org/octo-repo',
  },
  pusher: { name: 'octocat', email: 'octocat@github.com' },
  compare: 'https://github.com/octo-org/octo-repo/compare/6113728f27ae...000000000001',
  commits: [
    { id: 'a1', message: 'Fix the login redirect', author: { name: 'Mona' }, url: 'https://github.com/c/a1' },
    { id: 'b2', message: 'Add tests', author: { name: 'Hubot' }, url: 'https://github.com/c/b2' },
  ],
  head_commit: { id: 'b2', message: 'Add tests' },
};

describe('Slack-compatible incoming webhooks', () => {
  let srv: TestServer;
  let w: World;
  let channelId: string;
  let otherOrg: { id: string; admin: UserHandle };
  let member: UserHandle;

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_MAX_BODY_BYTES: '65536' });
    w = await World.create(srv.url);
    channelId = await w.channel(w.admin.api);
    otherOrg = await w.org();
    member = await w.user();
    expectStatus(await w.admin.api.post(`/api/channels/${channelId}/members`, { user_id: member.id }), 201);
  });
  afterAll(async () => {
    await srv?.close();
  });

  /** The URL's path on this test server (the answer names it under WORKROOM_PUBLIC_URL). */
  const local = (url: string) => `${srv.url}${new URL(url).pathname}`;

  async function create(fields: Record<string, unknown> = {}) {
    const hook = expectStatus(
      await w.admin.api.post('/api/incoming-webhooks', { name: 'Alerts', channel_id: channelId, ...fields }),
      201,
    ) as { id: string; url: string; bot_id: string };
    return { ...hook, url: local(hook.url) };
  }

  /** POSTs to the webhook URL; answers status, text and why. */
  async function post(url: string, body: string, contentType = 'application/json') {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
    return { status: res.status, text: await res.text(), why: res.headers.get('x-workroom-error') };
  }

  async function latest(
    container = `/api/channels/${channelId}`,
  ): Promise<{ content: string; bot_id: string }> {
    return expectStatus(await w.admin.api.get(`${container}/messages?limit=1`), 200).items[0];
  }

  it('creates: 201 with a URL holding its secret, shown once; the list shows no URL or secret', async () => {
    const hook = await create({ name: 'Grafana' });
    expect(hook.url).toMatch(new RegExp(`/api/incoming-webhooks/${hook.id}/wrih_[0-9a-f]{64}$`));
    const listed = expectStatus(await w.admin.api.get('/api/incoming-webhooks'), 200).items;
    const mine = listed.find((h: { id: string }) => h.id === hook.id);
    expect(mine).toMatchObject({ name: 'Grafana', channel_id: channelId, topic_id: null, revoked_at: null });
    const text = JSON.stringify(listed);
    expect(text).not.toContain(hook.url.split('/').pop()!);
    expect(text).not.toContain('secret');
    // Its bot is a member of the channel, named after the webhook.
    const bot = expectStatus(await w.admin.api.get(`/api/bots/${hook.bot_id}`), 200);
    expect(bot.name).toBe('Grafana');
  });

  it('refuses bad input with 400 naming the field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'x' }, 'channel_id'],
      [{ name: 'x', channel_id: channelId, topic_id: channelId }, 'channel_id'],
      [{ name: '', channel_id: channelId }, 'name'],
      [{ name: 'x', channel_id: 'nope' }, 'channel_id'],
      [{ name: 'x', channel_id: channelId, template: '{{#each commits}}{{message}}' }, 'template'],
      [{ name: 'x', channel_id: channelId, template: '{{a b}}' }, 'template'],
      [{ name: 'x', channel_id: channelId, extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await w.admin.api.post('/api/incoming-webhooks', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_input');
      expect(res.body.error.message).toContain(field);
    }
  });

  it('needs an org admin or the container’s admin; a bot key and no token are refused', async () => {
    // A member of the channel who did not create it: 403.
    const res = await member.api.post('/api/incoming-webhooks', { name: 'x', channel_id: channelId });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('forbidden');
    // The channel's creator (not an admin) may.
    const own = await w.channel(member.api);
    expectStatus(await member.api.post('/api/incoming-webhooks', { name: 'mine', channel_id: own }), 201);
    // Without credentials 401; with a bot key 403.
    expect((await w.anon.post('/api/incoming-webhooks', { name: 'x', channel_id: channelId })).status).toBe(
      401,
    );
    const bot = await w.bot(w.admin.api);
    expect((await bot.api.post('/api/incoming-webhooks', { name: 'x', channel_id: channelId })).status).toBe(
      403,
    );
    // The member sees only its own webhooks in the list.
    const listed = expectStatus(await member.api.get('/api/incoming-webhooks'), 200).items;
    expect(listed.map((h: { name: string }) => h.name)).toEqual(['mine']);
  });

  it('another organization’s channel and webhook answer 404', async () => {
    const res = await otherOrg.admin.api.post('/api/incoming-webhooks', { name: 'x', channel_id: channelId });
    expect(res.status).toBe(404);
    const hook = await create();
    expect((await otherOrg.admin.api.delete(`/api/incoming-webhooks/${hook.id}`)).status).toBe(404);
    const theirs = expectStatus(await otherOrg.admin.api.get('/api/incoming-webhooks'), 200).items;
    expect(theirs.map((h: { id: string }) => h.id)).not.toContain(hook.id);
    // Still working: the refused revocation changed nothing.
    expect((await post(hook.url, JSON.stringify({ text: 'still here' }))).text).toBe('ok');
  });

  it('posts Slack text: 200 ok, mrkdwn links, mentions and bold rendered to Markdown', async () => {
    const hook = await create();
    const text =
      'Deploy *finished* for <https://ci.example.com/42|build 42> by <@' +
      member.id +
      '> <!here> &amp; see <https://example.com> ~old~ `*kept*`';
    const r = await post(hook.url, JSON.stringify({ text }));
    expect(r).toMatchObject({ status: 200, text: 'ok' });
    const m = await latest();
    const name = member.email.split('@')[0];
    expect(m.content).toBe(
      `Deploy **finished** for [build 42](https://ci.example.com/42) by @${name} @here & see https://example.com ~~old~~ \`*kept*\``,
    );
    expect(m.bot_id).toBe(hook.bot_id);
  });

  it('renders Alertmanager’s Slack payload: coloured title with its link, text, buttons', async () => {
    const hook = await create({ name: 'Alertmanager' });
    expect(await post(hook.url, JSON.stringify(ALERTMANAGER))).toMatchObject({ status: 200, text: 'ok' });
    const { content } = await latest();
    expect(content).toContain(
      '🔴 **[[FIRING:1] InstanceDown (node-exporter 10.0.0.7:9100 critical)](http://alertmanager.example.com:9093/#/alerts?receiver=slack-notifications)**',
    );
    expect(content).toContain('**Alert:** Instance 10.0.0.7:9100 down - `critical`');
    expect(content).toContain('[Source](http://prometheus.example.com:9090/graph?g0.expr=up+%3D%3D+0)');
    expect(content).toContain('[Runbook :green_book:](https://runbooks.example.com/InstanceDown)');
    // Overrides are off by default: the username is not shown.
    expect(content).not.toContain('Alertmanager**');
  });

  it('renders Grafana’s Slack payload; with overrides allowed the username is shown', async () => {
    const hook = await create({ name: 'Grafana alerts', allow_overrides: true });
    expect(await post(hook.url, JSON.stringify(GRAFANA))).toMatchObject({ status: 200, text: 'ok' });
    const { content } = await latest();
    expect(content.startsWith('**Grafana**\n')).toBe(true);
    expect(content).toContain(
      '🔴 **[[FIRING:1] HighCPU Production (web-01)](https://grafana.example.com/alerting/list)**',
    );
    expect(content).toContain('Value: B=97.3');
    expect(content).toContain('_Grafana v10.4.1_');
  });

  it('renders Block Kit: header, section with fields, context, divider, link buttons', async () => {
    const hook = await create();
    const blocks = [
      { type: 'header', text: { type: 'plain_text', text: 'Nightly build' } },
      {
        type: 'section',
        text: { type: 'mrkdwn', text: '*3 failures* in <https://ci.example.com/n/7|run 7>' },
        fields: [
          { type: 'mrkdwn', text: '*Branch:* main' },
          { type: 'plain_text', text: 'Duration: 12m' },
        ],
      },
      { type: 'divider' },
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'Triggered by cron' }] },
      {
        type: 'actions',
        elements: [
          { type: 'button', text: { type: 'plain_text', text: 'Open' }, url: 'https://ci.example.com/n/7' },
        ],
      },
    ];
    expect((await post(hook.url, JSON.stringify({ text: 'fallback only', blocks }))).text).toBe('ok');
    expect((await latest()).content).toBe(
      '### Nightly build\n\n**3 failures** in [run 7](https://ci.example.com/n/7)\n\n- **Branch:** main\n- Duration: 12m' +
        '\n\n---\n\n_Triggered by cron_\n\n[Open](https://ci.example.com/n/7)',
    );
  });

  it('takes our own shape and Slack’s form post', async () => {
    const hook = await create();
    expect((await post(hook.url, JSON.stringify({ content: 'our **shape**' }))).text).toBe('ok');
    expect((await latest()).content).toBe('our **shape**');
    const form = `payload=${encodeURIComponent(JSON.stringify({ text: 'from a *form*' }))}`;
    expect((await post(hook.url, form, 'application/x-www-form-urlencoded')).text).toBe('ok');
    expect((await latest()).content).toBe('from a **form**');
  });

  it('template mode turns a GitHub push event into a message', async () => {
    const template =
      '**{{pusher.name}}** pushed {{commits.length}} commit(s) to [{{repository.full_name}}]({{repository.html_url}}):\n' +
      '{{#each commits}}- [{{message}}]({{url}}) ({{author.name}})\n{{/each}}' +
      '{{#if forced}}(forced){{else}}[compare]({{compare}}){{/if}} {{deleted | not deleted}}';
    const hook = await create({ name: 'GitHub', template });
    expect((await post(hook.url, JSON.stringify(GITHUB_PUSH))).text).toBe('ok');
    expect((await latest()).content).toBe(
      '**octocat** pushed 2 commit(s) to [octo-org/octo-repo](https://github.com/octo-org/octo-repo):\n' +
        '- [Fix the login redirect](https://github.com/c/a1) (Mona)\n- [Add tests](https://github.com/c/b2) (Hubot)\n' +
        '[compare](https://github.com/octo-org/octo-repo/compare/6113728f27ae...000000000001) not deleted',
    );
    // A body the template renders nothing for: no_text.
    const empty = await create({ name: 'empty', template: '{{missing}}' });
    expect(await post(empty.url, '{"a":1}')).toMatchObject({ status: 400, text: 'no_text' });
  });

  it('answers Slack’s errors: invalid_payload, no_text, no_service', async () => {
    const hook = await create();
    const before = (await latest()).content;
    expect(await post(hook.url, 'not json')).toMatchObject({ status: 400, text: 'invalid_payload' });
    expect(await post(hook.url, '[1,2]')).toMatchObject({ status: 400, text: 'invalid_payload' });
    expect(await post(hook.url, '{}')).toMatchObject({ status: 400, text: 'no_text' });
    expect(await post(hook.url, '{"text":"  "}')).toMatchObject({ status: 400, text: 'no_text' });
    expect(await post(hook.url, '{"content":"x","bogus":1}')).toMatchObject({
      status: 400,
      text: 'invalid_payload',
      why: 'bogus: unknown field',
    });
    expect(await post(hook.url, 'payload=%7B', 'application/x-www-form-urlencoded')).toMatchObject({
      status: 400,
      text: 'invalid_payload',
    });
    // A wrong secret, an unknown id, a malformed path: 404 no_service.
    const wrong = hook.url.replace(/wrih_[0-9a-f]{4}/, 'wrih_0000');
    expect(await post(wrong, '{"text":"x"}')).toMatchObject({ status: 404, text: 'no_service' });
    const unknown = hook.url.replace(hook.id, '00000000-0000-4000-8000-000000000000');
    expect(await post(unknown, '{"text":"x"}')).toMatchObject({ status: 404, text: 'no_service' });
    expect(await post(`${srv.url}/api/incoming-webhooks/${hook.id}/short`, '{"text":"x"}')).toMatchObject({
      status: 404,
      text: 'no_service',
    });
    expect((await latest()).content).toBe(before);
  });

  it('a body over the limit answers 413 and posts nothing', async () => {
    const hook = await create();
    const before = (await latest()).content;
    const res = await post(hook.url, JSON.stringify({ text: 'x'.repeat(70_000) }));
    expect(res.status).toBe(413);
    expect((await latest()).content).toBe(before);
  });

  it('revoking: the URL answers 404 no_service at once; its bot is disabled', async () => {
    const hook = await create();
    expect((await post(hook.url, '{"text":"before"}')).text).toBe('ok');
    // A member who did not create it and is not the container's admin: 403.
    expect((await member.api.delete(`/api/incoming-webhooks/${hook.id}`)).status).toBe(403);
    const revoked = expectStatus(await w.admin.api.delete(`/api/incoming-webhooks/${hook.id}`), 200);
    expect(revoked.revoked_at).not.toBeNull();
    expect(await post(hook.url, '{"text":"after"}')).toMatchObject({ status: 404, text: 'no_service' });
    expect((await latest()).content).toBe('before');
    expect(expectStatus(await w.admin.api.get(`/api/bots/${hook.bot_id}`), 200).status).toBe('disabled');
    const listed = expectStatus(await w.admin.api.get('/api/incoming-webhooks'), 200).items;
    expect(listed.map((h: { id: string }) => h.id)).not.toContain(hook.id);
    const all = expectStatus(await w.admin.api.get('/api/incoming-webhooks?include_revoked=true'), 200).items;
    expect(all.map((h: { id: string }) => h.id)).toContain(hook.id);
    expect((await w.admin.api.delete('/api/incoming-webhooks/nope')).status).toBe(400);
  });

  it('posts into a topic, created by the project’s creator', async () => {
    const { topicId } = await w.project(member.api);
    const hook = expectStatus(
      await member.api.post('/api/incoming-webhooks', { name: 'CI', topic_id: topicId }),
      201,
    );
    expect((await post(local(hook.url), JSON.stringify({ text: 'topic *hello*' }))).text).toBe('ok');
    expect((await latest(`/api/topics/${topicId}`)).content).toBe('topic **hello**');
    // Someone outside the project does not see the topic: 404.
    const outsider = await w.user();
    expect((await outsider.api.post('/api/incoming-webhooks', { name: 'x', topic_id: topicId })).status).toBe(
      404,
    );
  });
});

describe('Slack-compatible incoming webhooks: the rate limit', () => {
  const clock = new FrozenClock();
  let srv: TestServer;

  beforeAll(async () => {
    srv = await startTestServer(
      { WORKROOM_RATE_LIMIT_BOT_PER_SECOND: '1', WORKROOM_RATE_LIMIT_BOT_BURST: '3' },
      { clock },
    );
  });
  afterAll(async () => {
    await srv?.close();
  });

  it('each webhook has its own bucket of the bot rate: 429 with Retry-After once it is spent, nothing posted', async () => {
    const w = await World.create(srv.url);
    const channelId = await w.channel(w.admin.api);
    const make = async (name: string) => {
      const h = expectStatus(
        await w.admin.api.post('/api/incoming-webhooks', { name, channel_id: channelId }),
        201,
      );
      return `${srv.url}${new URL(h.url as string).pathname}`;
    };
    const [a, b] = [await make('a'), await make('b')];
    const send = (url: string, text: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text }),
      });
    for (let i = 0; i < 3; i++) expect((await send(a, `a${i}`)).status).toBe(200);
    const refused = await send(a, 'a3');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
    // Another webhook is not affected; a second later the first one may post again.
    expect((await send(b, 'b0')).status).toBe(200);
    clock.advance(1000);
    expect((await send(a, 'a4')).status).toBe(200);
    const items = expectStatus(
      await w.admin.api.get(`/api/channels/${channelId}/messages?limit=10`),
      200,
    ).items;
    expect(items.map((m: { content: string }) => m.content).reverse()).toEqual([
      'a0',
      'a1',
      'a2',
      'b0',
      'a4',
    ]);
  });
});

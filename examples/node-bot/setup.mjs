/* global fetch */
// One-time setup for the example bot on a local Workroom, through the REST API as an admin:
// registers the bot (webhook http://localhost:8000/webhook, subscribed to message.created), issues its
// API key and webhook secret, and makes a channel and a project topic with the bot in them.
// Prints the environment for bot.mjs. Usage: WORKROOM_ADMIN_EMAIL=… WORKROOM_ADMIN_PASSWORD=… node setup.mjs
const base = process.env.WORKROOM_URL ?? 'http://localhost:3000';
const webhookUrl = process.env.BOT_WEBHOOK_URL ?? 'http://localhost:8000/webhook';
let token;

async function call(method, path, body) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const suffix = Math.random().toString(16).slice(2, 8);
token = (
  await call('POST', '/api/auth/login', {
    email: process.env.WORKROOM_ADMIN_EMAIL,
    password: process.env.WORKROOM_ADMIN_PASSWORD,
  })
).token;
const bot = await call('POST', '/api/bots', {
  name: `echo-bot-${suffix}`,
  description: 'The SDK example: /echo, /todo, !echo, help',
  webhook_url: webhookUrl,
  events: ['message.created'],
});
const key = await call('POST', `/api/bots/${bot.bot_id}/api-keys`, {});
const { secret } = await call('POST', `/api/bots/${bot.bot_id}/webhook-secret`);
const channel = await call('POST', '/api/channels', { name: `bot-playground-${suffix}` });
await call('POST', `/api/channels/${channel.id}/members`, { bot_id: bot.bot_id });
const project = await call('POST', '/api/projects', { name: `bot-project-${suffix}` });
await call('POST', `/api/projects/${project.id}/members`, { bot_id: bot.bot_id });
const topic = await call('POST', `/api/projects/${project.id}/topics`, { name: 'todos' });

console.log(`# bot ${bot.bot_id}, channel #${channel.name} (${channel.id}), topic ${topic.id}`);
console.log(`export WORKROOM_URL=${base}`);
console.log(`export WORKROOM_BOT_KEY=${key.key}`);
console.log(`export WORKROOM_WEBHOOK_SECRET=${secret}`);
console.log(`export TODO_TOPIC_ID=${topic.id}`);
console.log(`export CHANNEL_ID=${channel.id}`);

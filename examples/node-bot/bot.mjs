// An echo/help bot for Workroom: answers /echo and /todo, reacts to messages, creates tasks.
// Run: see README.md (WORKROOM_URL, WORKROOM_BOT_KEY; WORKROOM_WEBHOOK_SECRET and PORT for a webhook;
// optional TODO_TOPIC_ID). Tests: bot.test.mjs starts it with startBot() against a throwaway Workroom.
import { pathToFileURL } from 'node:url';
import { SocketReceiver, WebhookReceiver, WorkroomClient, WorkroomError } from '@workroom/sdk';

/**
 * Starts the bot against `baseUrl` with `apiKey`: over a webhook when `webhookSecret` is given (listening on
 * `port`; 0 picks a free one), else over a socket. Resolves once it receives; `stop()` ends it. Importing
 * this file starts nothing.
 */
export async function startBot({
  baseUrl,
  apiKey,
  webhookSecret,
  port = 8000,
  todoTopicId,
  log = console.log,
}) {
  const client = new WorkroomClient({ baseUrl, apiKey });
  // The one-line switch: a webhook (a URL the server can reach, and its secret) or a socket the bot opens
  // (no public URL needed; docs/SOCKET.md). Both take the same handlers below.
  const useSocket = !webhookSecret;
  const receiver = useSocket
    ? new SocketReceiver({ baseUrl, apiKey })
    : new WebhookReceiver({ port, secret: webhookSecret });

  const me = await client.auth();
  log(`signed in as bot ${me.name} (${me.bot_id})`);

  // Slash commands appear in the palette once registered; registering again answers 409, which is fine.
  const commands = [
    { command: 'echo', description: 'Repeat what you say', usageHint: '/echo <text>' },
    { command: 'todo', description: 'Create a task', usageHint: '/todo <title>' },
  ];
  for (const c of commands) {
    await client.registerCommand(c).catch((e) => {
      if (!(e instanceof WorkroomError && e.code === 'conflict')) throw e;
    });
  }

  // The returned text is the bot's reply (it must come within 4 s; longer work goes through the client).
  receiver.command('echo', (cmd) => cmd.args || 'Nothing to echo. Usage: /echo <text>');

  receiver.command('todo', async (cmd) => {
    const topicId = cmd.topic_id ?? todoTopicId;
    if (!topicId) return 'Run /todo in a project topic (or start the bot with TODO_TOPIC_ID).';
    if (!cmd.args) return 'Usage: /todo <title>';
    const task = await client.createTask({ topic_id: topicId, title: cmd.args, assignee_id: cmd.user_id });
    return { content: `Created task "${task.title}" (${task.task_id}), assigned to you.`, ephemeral: true };
  });

  // Handlers may take their time: a webhook is answered 200 first; over a socket, the delivery is acked
  // when the handler's promise resolves.
  receiver.on('message.created', async (event) => {
    const m = event.data;
    if (m.sender_type === 'bot') return; // never answer bots (ourselves included)
    const target = m.channel_id
      ? { channelId: m.channel_id }
      : m.topic_id
        ? { topicId: m.topic_id }
        : { dmRoomId: m.dm_room_id };
    const text = m.content.trim();
    if (/^!?help\b/i.test(text)) {
      await client.sendMessage({
        ...target,
        content: 'I answer `/echo <text>` and `/todo <title>`; `!echo <text>` works too.',
      });
    } else if (text.startsWith('!echo ')) {
      await client.sendMessage({ ...target, content: text.slice(6) });
    }
  });

  receiver.on('*', (event) => log(`event ${event.event_type}`));

  await receiver.start();
  log(useSocket ? `connected to ${baseUrl} over a socket` : `listening on :${receiver.port}/webhook`);
  return { receiver, client, port: useSocket ? undefined : receiver.port, stop: () => receiver.stop() };
}

// Run as a program (`node bot.mjs`): configured by the environment.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const need = (name) => process.env[name] || (console.error(`Set ${name} (see README.md)`), process.exit(1));
  const bot = await startBot({
    baseUrl: process.env.WORKROOM_URL ?? 'http://localhost:3000',
    apiKey: need('WORKROOM_BOT_KEY'),
    webhookSecret: process.env.WORKROOM_WEBHOOK_SECRET || undefined,
    port: Number(process.env.PORT ?? 8000),
    todoTopicId: process.env.TODO_TOPIC_ID,
  });
  process.on('SIGINT', () => bot.stop().then(() => process.exit(0)));
}

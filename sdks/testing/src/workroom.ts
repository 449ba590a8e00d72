import { randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { toEpoch, toMs } from './duration.js';
import { HarnessProcess } from './process.js';

export interface StartOptions {
  /** A Workroom checkout (built) or its server/bin/workroom.js; default WORKROOM_SERVER, else this checkout. */
  server?: string;
  /** Server settings for this harness (e.g. `{ WORKROOM_SOCKET_LEASE: '2s' }`). */
  env?: Record<string, string>;
  /** How long the server may take to start (default 60 s). */
  timeoutMs?: number;
}

export interface UserHandle {
  kind: 'user';
  name: string;
  id: string;
  email: string;
  password: string;
  token: string;
}

export interface BotHandle {
  kind: 'bot';
  name: string;
  id: string;
  /** The bot's API key (all scopes unless the spec named some). */
  key: string;
  /** Its webhook signing secret (for a WebhookReceiver). */
  secret: string;
  /** The environment the example bots read: WORKROOM_URL, WORKROOM_BOT_KEY, WORKROOM_WEBHOOK_SECRET. */
  env: Record<string, string>;
}

export interface ContainerHandle {
  kind: 'channel' | 'topic';
  name: string;
  id: string;
}

export interface ProjectHandle {
  name: string;
  id: string;
  topics: Record<string, ContainerHandle>;
}

export interface BotSpec<N extends string = string> {
  name: N;
  /** Key scopes; omitted: every scope. */
  scopes?: string[];
  /** Slash commands registered for the bot: `'echo'` or `{ command, description?, usage_hint? }`. */
  commands?: (string | { command: string; description?: string; usage_hint?: string })[];
  /** Subscribed event types (default `['message.created']`). */
  events?: string[];
  /** A webhook URL (127.0.0.1 is allowed in the harness); omitted: the bot receives over its socket. */
  webhookUrl?: string;
}

export interface WorkspaceSpec<U extends string, C extends string, P extends string, B extends string> {
  /** Members of the organization (`{ name, role }` for another role than `member`). */
  users?: (U | { name: U; role?: 'member' | 'dept_admin' | 'org_admin' })[];
  /** Channels; every user and bot is a member unless `members` names them. */
  channels?: (C | { name: C; private?: boolean; members?: string[] })[];
  /** Projects with topics; every user and bot is a member. */
  projects?: (P | { name: P; topics?: string[] })[];
  bots?: BotSpec<B>[];
}

export interface Workspace<U extends string, C extends string, P extends string, B extends string> {
  orgId: string;
  /** The organization's org_admin, who made everything below. */
  admin: UserHandle;
  users: Record<U, UserHandle>;
  channels: Record<C, ContainerHandle>;
  projects: Record<P, ProjectHandle>;
  bots: Record<B, BotHandle>;
}

/** A message as the REST API lists it (the fields tests read most; the rest is there too). */
export interface Message {
  id: string;
  content: string;
  sender_type: 'user' | 'bot';
  sender_id: string;
  bot_id: string | null;
  channel_id: string | null;
  topic_id: string | null;
  created_at: string;
  edited_at?: string | null;
  actions: { type: string; id: string; label?: string; value?: string }[] | null;
  [field: string]: unknown;
}

export type Container = string | ContainerHandle;
export type Sender = string | UserHandle | BotHandle;

export interface WaitOptions {
  /** Milliseconds (default 5,000). */
  timeout?: number;
  /** What is awaited, for the failure message. */
  describe?: string;
}

/** An HTTP answer that was not 2xx. */
export class WorkroomApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    what: string,
  ) {
    super(`${what} answered ${status}: ${typeof body === 'string' ? body : JSON.stringify(body)}`);
  }
}

const PASSWORD = 'harness-password-1';
const order = (a: Message, b: Message) =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** Starts a throwaway Workroom (`workroom harness`); reuse one per test file and `stop()` it after. */
export async function startWorkroom(opts: StartOptions = {}): Promise<Workroom> {
  const { proc, ready } = await HarnessProcess.start(opts);
  return new Workroom(proc, ready.url, ready.admin, ready.dir);
}

/** What a user does: post, run a slash command, click an action, read. */
export class UserSession {
  constructor(
    private readonly wr: Workroom,
    readonly user: UserHandle,
  ) {}

  /** Posts `text` in a channel or topic; answers the message. */
  async post(container: Container, text: string): Promise<Message> {
    const c = this.wr.container(container);
    const m = (await this.wr.request(
      'POST',
      `${path(c)}/messages`,
      { content: text },
      this.user.token,
    )) as Message;
    this.wr.moveCursor(c, m);
    return m;
  }

  /** Runs a slash command (`'/echo hi'`) in a channel or topic; answers `POST /api/commands/execute`'s body
   * (for a bot's command: `{ status: 'dispatched', reply: { content, ephemeral, message_id } | null, … }`). */
  async command(container: Container, text: string): Promise<CommandAnswer> {
    const c = this.wr.container(container);
    await this.wr.markNow(c);
    const body = { text, [c.kind === 'channel' ? 'channel_id' : 'topic_id']: c.id };
    return (await this.wr.request('POST', '/api/commands/execute', body, this.user.token)) as CommandAnswer;
  }

  /** Clicks a button (its own value) or chooses a select's option (`value`) on a bot's message. */
  async click(message: string | { id: string }, actionId: string, value?: string): Promise<unknown> {
    const id = typeof message === 'string' ? message : message.id;
    const body = value === undefined ? { action_id: actionId } : { action_id: actionId, value };
    return this.wr.request('POST', `/api/messages/${id}/actions`, body, this.user.token);
  }

  /** The container's latest messages as this user reads them, oldest first. */
  async messages(container: Container, limit = 50): Promise<Message[]> {
    return this.wr.messages(container, limit, this.user.token);
  }

  /** Any REST call as this user. */
  api(method: string, apiPath: string, body?: unknown): Promise<unknown> {
    return this.wr.request(method, apiPath, body, this.user.token);
  }
}

export interface CommandAnswer {
  status: string;
  text?: string;
  reply?: { content: string; ephemeral: boolean; message_id: string | null } | null;
  reply_error?: string | null;
  delivery?: { status: string; message?: string | null };
  [field: string]: unknown;
}

function path(c: ContainerHandle): string {
  return c.kind === 'channel' ? `/api/channels/${c.id}` : `/api/topics/${c.id}`;
}

export class Workroom {
  /** The current workspace (the last `workspace()`): names in `as()`, `post()`, `nextMessage()` resolve in it. */
  #ws: Workspace<string, string, string, string> | undefined;
  /** Per container: the last message a test action or nextMessage() has passed. */
  readonly #cursor = new Map<string, Message | null>();
  #count = 0;

  /** The server's business time, moved only over the harness process's stdin. */
  readonly clock = {
    /** Moves the server's clock on (`'2h'`, `'90s'`, ms); timers now due fire (scheduled jobs…). */
    advance: async (d: number | string): Promise<Date> =>
      new Date(await this.proc.send({ advance_ms: toMs(d) })),
    /** Moves the server's clock on to `at` (never back: a time already passed leaves it). */
    set: async (at: Date | string | number): Promise<Date> =>
      new Date(await this.proc.send({ set: toEpoch(at) })),
    /** The server's time now. */
    now: async (): Promise<Date> => new Date(await this.proc.send({})),
  };

  constructor(
    private readonly proc: HarnessProcess,
    /** The server's base URL, e.g. http://127.0.0.1:41234 */
    readonly url: string,
    /** The system_admin of the harness (email, password, token). */
    readonly admin: { email: string; password: string; token: string },
    /** The server's temporary data directory (deleted by stop()). */
    readonly dataDir: string,
  ) {}

  /**
   * Users, channels, projects with topics and bots with keys, secrets and commands, in a new organization
   * (so several workspaces of one harness do not meet), all made through the REST API. Every user and
   * bot is a member of every channel and project unless a channel names its `members`.
   */
  async workspace<
    U extends string = never,
    C extends string = never,
    P extends string = never,
    B extends string = never,
  >(spec: WorkspaceSpec<U, C, P, B>): Promise<Workspace<U, C, P, B>> {
    const tag = `${++this.#count}-${randomBytes(3).toString('hex')}`;
    const sys = this.admin.token;
    const org = (await this.request('POST', '/api/organizations', { name: `harness-${tag}` }, sys)) as {
      id: string;
    };
    const newUser = async (name: string, role: string): Promise<UserHandle> => {
      const email = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-') || 'user'}-${tag}@harness.test`;
      const u = (await this.request(
        'POST',
        '/api/users',
        { email, display_name: name, password: PASSWORD, role, organization_id: org.id },
        sys,
      )) as { id: string };
      const { token } = (await this.request('POST', '/api/auth/login', { email, password: PASSWORD })) as {
        token: string;
      };
      return { kind: 'user', name, id: u.id, email, password: PASSWORD, token };
    };
    const admin = await newUser('admin', 'org_admin');
    const as = admin.token;
    const users = {} as Record<string, UserHandle>;
    for (const u of spec.users ?? []) {
      const { name, role } = typeof u === 'string' ? { name: u, role: 'member' } : { role: 'member', ...u };
      users[name] = await newUser(name, role);
    }
    const bots = {} as Record<string, BotHandle>;
    for (const b of spec.bots ?? []) {
      const bot = (await this.request(
        'POST',
        '/api/bots',
        {
          name: b.name,
          events: b.events ?? ['message.created'],
          ...(b.webhookUrl ? { webhook_url: b.webhookUrl } : {}),
        },
        as,
      )) as { bot_id: string };
      const key = (await this.request(
        'POST',
        `/api/bots/${bot.bot_id}/api-keys`,
        b.scopes ? { scopes: b.scopes } : {},
        as,
      )) as {
        key: string;
      };
      const { secret } = (await this.request(
        'POST',
        `/api/bots/${bot.bot_id}/webhook-secret`,
        undefined,
        as,
      )) as {
        secret: string;
      };
      for (const c of b.commands ?? []) {
        const cmd = typeof c === 'string' ? { command: c } : c;
        await this.request(
          'POST',
          `/api/bots/${bot.bot_id}/commands`,
          { description: `/${cmd.command}`, ...cmd, command: cmd.command.replace(/^\//, '') },
          as,
        );
      }
      bots[b.name] = {
        kind: 'bot',
        name: b.name,
        id: bot.bot_id,
        key: key.key,
        secret,
        env: { WORKROOM_URL: this.url, WORKROOM_BOT_KEY: key.key, WORKROOM_WEBHOOK_SECRET: secret },
      };
    }
    const everyone = [...Object.values(users), ...Object.values(bots)];
    const member = (h: UserHandle | BotHandle) => (h.kind === 'user' ? { user_id: h.id } : { bot_id: h.id });
    const channels = {} as Record<string, ContainerHandle>;
    for (const c of spec.channels ?? []) {
      const s = typeof c === 'string' ? { name: c } : c;
      const ch = (await this.request(
        'POST',
        '/api/channels',
        { name: s.name, is_private: s.private ?? false },
        as,
      )) as {
        id: string;
      };
      const members = s.members
        ? s.members.map((n) => {
            const h = users[n] ?? bots[n];
            if (!h)
              throw new Error(
                `workspace: channel ${s.name} names member "${n}", not a user or bot of the spec`,
              );
            return h;
          })
        : everyone;
      for (const h of members) await this.request('POST', `/api/channels/${ch.id}/members`, member(h), as);
      channels[s.name] = { kind: 'channel', name: s.name, id: ch.id };
    }
    const projects = {} as Record<string, ProjectHandle>;
    for (const p of spec.projects ?? []) {
      const s = typeof p === 'string' ? { name: p, topics: ['general'] } : p;
      const pr = (await this.request('POST', '/api/projects', { name: s.name }, as)) as { id: string };
      for (const h of everyone) await this.request('POST', `/api/projects/${pr.id}/members`, member(h), as);
      const topics: Record<string, ContainerHandle> = {};
      for (const t of s.topics ?? ['general']) {
        const tp = (await this.request('POST', `/api/projects/${pr.id}/topics`, { name: t }, as)) as {
          id: string;
        };
        topics[t] = { kind: 'topic', name: `${s.name}/${t}`, id: tp.id };
      }
      projects[s.name] = { name: s.name, id: pr.id, topics };
    }
    const ws = { orgId: org.id, admin, users, channels, projects, bots };
    this.#ws = ws;
    return ws as unknown as Workspace<U, C, P, B>;
  }

  /** Sets (or, with null, removes) a bot's webhook URL, e.g. once its WebhookReceiver listens on port 0. */
  async setWebhookUrl(bot: BotHandle, url: string | null): Promise<void> {
    await this.request('PATCH', `/api/bots/${bot.id}`, { webhook_url: url }, this.#adminToken());
  }

  /** What `user` does (a handle, or a user's name in the current workspace). */
  as(user: string | UserHandle): UserSession {
    return new UserSession(this, typeof user === 'string' ? this.#named(user, 'user') : user);
  }

  /**
   * The first message after the last thing this harness did in the container (a post, a command, a
   * click, or the message the previous nextMessage answered), from `from` if given, matching `matching`
   * if given. Fails after `timeout` with what was expected and the container's last messages.
   */
  async nextMessage(
    container: Container,
    opts: WaitOptions & { from?: Sender; matching?: string | RegExp | ((m: Message) => boolean) } = {},
  ): Promise<Message> {
    const c = this.container(container);
    const fromId =
      opts.from === undefined
        ? undefined
        : typeof opts.from === 'string'
          ? this.#sender(opts.from).id
          : opts.from.id;
    const after = this.#cursor.get(c.id) ?? null;
    const match = opts.matching;
    const ok = (m: Message) =>
      (after === null || order(m, after) > 0) &&
      (fromId === undefined || m.sender_id === fromId || m.bot_id === fromId) &&
      (match === undefined ||
        (typeof match === 'string'
          ? m.content.includes(match)
          : match instanceof RegExp
            ? match.test(m.content)
            : match(m)));
    let last: Message[] = [];
    const found = await this.#poll(async () => {
      last = await this.messages(c);
      return last.find(ok);
    }, opts.timeout ?? 5000);
    if (found) {
      this.#cursor.set(c.id, found);
      return found;
    }
    const who = opts.from === undefined ? 'anyone' : this.#describeSender(fromId!);
    const what = [
      `a new message in ${describeContainer(c)} from ${who}`,
      match === undefined
        ? ''
        : ` matching ${typeof match === 'function' ? 'the given predicate' : String(match)}`,
      after ? `, after ${this.#line(after)}` : '',
    ].join('');
    throw new Error(
      `nextMessage: expected ${what} within ${opts.timeout ?? 5000} ms${opts.describe ? ` (${opts.describe})` : ''}; ` +
        `none arrived. The last messages in ${describeContainer(c)} (oldest first):\n` +
        (last.length
          ? last
              .slice(-10)
              .map((m) => `  ${this.#line(m)}`)
              .join('\n')
          : '  (none)') +
        this.proc.stderrTail(),
    );
  }

  /**
   * Polls `check` until it returns something truthy (answered) or `timeout` passes; the failure says
   * what was awaited (`describe`) and the last value or error `check` gave.
   */
  async waitFor<T>(check: () => T | Promise<T>, opts: WaitOptions = {}): Promise<NonNullable<T>> {
    let lastValue: unknown;
    let lastError: unknown;
    const found = await this.#poll(async () => {
      try {
        lastValue = await check();
        lastError = undefined;
        return lastValue ? (lastValue as NonNullable<T>) : undefined;
      } catch (err) {
        lastError = err;
        return undefined;
      }
    }, opts.timeout ?? 5000);
    if (found !== undefined) return found;
    const last =
      lastError !== undefined
        ? `it last threw: ${lastError instanceof Error ? lastError.message : String(lastError)}`
        : `it last answered: ${inspect(lastValue, { depth: 4, breakLength: 100 })}`;
    throw new Error(
      `waitFor: ${opts.describe ?? check.toString()} did not come true within ${opts.timeout ?? 5000} ms; ${last}` +
        this.proc.stderrTail(),
    );
  }

  /** A container's latest messages (as the workspace's admin, or `token`), oldest first. */
  async messages(container: Container, limit = 50, token?: string): Promise<Message[]> {
    const c = this.container(container);
    const body = (await this.request(
      'GET',
      `${path(c)}/messages?limit=${limit}`,
      undefined,
      token ?? this.#adminToken(),
    )) as {
      items: Message[];
    };
    return body.items.sort(order);
  }

  /** A topic's tasks (as the workspace's admin). */
  async tasks(topic: Container): Promise<{ id: string; title: string; [field: string]: unknown }[]> {
    const c = this.container(topic);
    if (c.kind !== 'topic') throw new Error(`tasks: ${describeContainer(c)} is not a topic`);
    return (
      (await this.request('GET', `/api/topics/${c.id}/tasks`, undefined, this.#adminToken())) as { items: [] }
    ).items;
  }

  /** Any REST call (as the harness's system_admin unless a token is given); throws on a non-2xx answer. */
  async request(
    method: string,
    apiPath: string,
    body?: unknown,
    token: string | null = this.admin.token,
  ): Promise<unknown> {
    const res = await fetch(this.url + apiPath, {
      method,
      headers: {
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON: the text */
    }
    if (!res.ok) throw new WorkroomApiError(res.status, parsed, `${method} ${apiPath}`);
    return parsed;
  }

  /** Stops the server (its temporary data is deleted). */
  async stop(): Promise<void> {
    await this.proc.stop();
  }

  /** A container handle from a handle, a name in the current workspace (`'general'`, `'launch/todos'`) or a channel id. */
  container(c: Container): ContainerHandle {
    if (typeof c !== 'string') return c;
    const ws = this.#ws;
    if (ws) {
      const ch = ws.channels[c];
      if (ch) return ch;
      for (const p of Object.values(ws.projects)) {
        for (const t of Object.values(p.topics)) if (t.name === c || t.id === c) return t;
      }
      const topics = Object.values(ws.projects).flatMap((p) => Object.values(p.topics));
      const byShort = topics.filter((t) => t.name.endsWith(`/${c}`));
      if (byShort.length === 1) return byShort[0]!;
      for (const x of Object.values(ws.channels)) if (x.id === c) return x;
    }
    if (/^[0-9a-f-]{36}$/i.test(c)) return { kind: 'channel', name: c, id: c };
    throw new Error(`no channel or topic "${c}" in the current workspace`);
  }

  /** @internal Moves the container's cursor to `m` (a post by the test). */
  moveCursor(c: ContainerHandle, m: Message): void {
    this.#cursor.set(c.id, m);
  }

  /** @internal Moves the container's cursor to its latest message (before a command or a click). */
  async markNow(c: ContainerHandle): Promise<void> {
    const latest = (await this.messages(c, 1)).at(-1);
    if (latest) this.#cursor.set(c.id, latest);
  }

  async #poll<T>(check: () => Promise<T | undefined>, timeout: number): Promise<T | undefined> {
    const deadline = Date.now() + timeout;
    for (;;) {
      const v = await check();
      if (v !== undefined) return v;
      if (Date.now() >= deadline) return undefined;
      // Polling the server's state is the wait: the thing awaited is what the check reads.
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  #adminToken(): string {
    return this.#ws?.admin.token ?? this.admin.token;
  }

  #named(name: string, kind: 'user'): UserHandle {
    const h = this.#ws?.users[name] ?? (this.#ws?.admin.name === name ? this.#ws.admin : undefined);
    if (!h) throw new Error(`no ${kind} "${name}" in the current workspace`);
    return h;
  }

  #sender(name: string): UserHandle | BotHandle {
    const h = this.#ws?.bots[name] ?? this.#ws?.users[name];
    if (!h) throw new Error(`no user or bot "${name}" in the current workspace`);
    return h;
  }

  #describeSender(id: string): string {
    const ws = this.#ws;
    const bot = ws && Object.values(ws.bots).find((b) => b.id === id);
    if (bot) return `bot "${bot.name}"`;
    const user = ws && [...Object.values(ws.users), ws.admin].find((u) => u.id === id);
    return user ? `user "${user.name}"` : id;
  }

  #line(m: Message): string {
    const t = m.created_at.slice(11, 23);
    return `${t} ${this.#describeSender(m.sender_id)}: ${JSON.stringify(m.content.length > 120 ? `${m.content.slice(0, 120)}…` : m.content)}`;
  }
}

function describeContainer(c: ContainerHandle): string {
  return c.kind === 'channel' ? `#${c.name}` : `topic ${c.name}`;
}

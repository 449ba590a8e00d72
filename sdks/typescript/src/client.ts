import { Transport, type CallOptions, type RetryOptions } from './http.js';
import type {
  BotInfo,
  Command,
  CommandList,
  CommandResponse,
  CommandResponseInput,
  Containers,
  CreateTaskArgs,
  DeletedCommand,
  DeletedMessage,
  DmMessage,
  GetUserInfoArgs,
  ListChannelsArgs,
  ListTasksArgs,
  ListUsersArgs,
  Message,
  MessageList,
  ReadMessagesArgs,
  RegisterCommandInput,
  SearchArgs,
  SearchResult,
  SendDmInput,
  SendMessageArgs,
  SendMessageInput,
  Task,
  TaskList,
  UpdateMessageInput,
  UpdateTaskArgs,
  User,
  UserList,
} from './types.js';

export interface WorkroomClientOptions {
  /** Where Workroom runs, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** The bot API key (`wrbk_…`). */
  apiKey: string;
  /** The bot's id; when omitted, the first call that needs it (DM, commands) calls `auth()` once. */
  botId?: string;
  /** Time-out of one attempt in ms (default 10 000). */
  timeoutMs?: number;
  /** Retry policy (defaults: 3 retries, 500 ms first backoff, 30 s longest wait). */
  retry?: Partial<RetryOptions>;
  /** A fetch implementation (default: Node's global fetch). */
  fetch?: typeof fetch;
  /** Sent as User-Agent. */
  userAgent?: string;
}

/** Names of the MCP tools (docs/MCP.md) that `callTool` runs through their REST twins. */
export type ToolName =
  | 'send_message'
  | 'read_messages'
  | 'list_channels'
  | 'create_task'
  | 'update_task'
  | 'list_tasks'
  | 'search'
  | 'get_user_info'
  | 'list_users';

const enc = encodeURIComponent;

type ToolCall = (c: WorkroomClient, args: never, opts?: CallOptions) => Promise<unknown>;
/** Each MCP tool's method; the arguments are passed as the tool takes them. */
const TOOLS: Record<ToolName, ToolCall> = {
  send_message: (c, a: SendMessageArgs, o) => c.sendMessageTool(a, o),
  read_messages: (c, a: ReadMessagesArgs, o) => c.readMessages(a, o),
  list_channels: (c, a: ListChannelsArgs, o) => c.listChannels(a, o),
  create_task: (c, a: CreateTaskArgs, o) => c.createTask(a, o),
  update_task: (c, a: UpdateTaskArgs, o) => c.updateTask(a, o),
  list_tasks: (c, a: ListTasksArgs, o) => c.listTasks(a, o),
  search: (c, a: SearchArgs, o) => c.search(a, o),
  get_user_info: (c, a: GetUserInfoArgs, o) => c.getUserInfo(a, o),
  list_users: (c, a: ListUsersArgs, o) => c.listUsers(a, o),
};

/** `{ channel_id | topic_id | dm_room_id }` → the container's message path, checking there is exactly one. */
function containerPath(a: { channel_id?: string; topic_id?: string; dm_room_id?: string }): string {
  const given = [
    a.channel_id !== undefined && `/api/channels/${enc(a.channel_id)}`,
    a.topic_id !== undefined && `/api/topics/${enc(a.topic_id)}`,
    a.dm_room_id !== undefined && `/api/dm-rooms/${enc(a.dm_room_id)}`,
  ].filter((x): x is string => typeof x === 'string');
  if (given.length !== 1) throw new TypeError('Give exactly one of channelId, topicId, dmRoomId');
  return `${given[0]}/messages`;
}

/**
 * A Workroom bot's client over the REST API. Every method is one logical call: retried on 429, and on
 * 5xx or network errors when repeating is harmless, with one Idempotency-Key for all its attempts (see
 * http.ts). Failures throw `WorkroomError`.
 *
 * The MCP tools are offered as methods over their REST twins (same operations, same arguments, same
 * scopes): their types come from the OpenAPI document, and they share the retry and idempotency path.
 */
export class WorkroomClient {
  readonly #http: Transport;
  #botId: string | undefined;
  #auth: Promise<BotInfo> | undefined;

  constructor(options: WorkroomClientOptions) {
    if (!options?.baseUrl) throw new TypeError('WorkroomClient: baseUrl is required');
    if (!options.apiKey) throw new TypeError('WorkroomClient: apiKey is required');
    this.#botId = options.botId;
    this.#http = new Transport({
      baseUrl: options.baseUrl,
      apiKey: options.apiKey,
      timeoutMs: options.timeoutMs ?? 10_000,
      retry: { maxRetries: 3, baseDelayMs: 500, maxDelayMs: 30_000, ...options.retry },
      fetch: options.fetch ?? globalThis.fetch,
      userAgent: options.userAgent ?? 'workroom-sdk-node/0.1.0',
    });
  }

  /** Checks the key and answers the bot's identity (`bot_id`, name, key scopes, …). */
  async auth(opts?: CallOptions): Promise<BotInfo> {
    const info = await this.#http.request<BotInfo>({ method: 'POST', path: '/api/bots/auth' }, opts);
    this.#botId = info.bot_id;
    return info;
  }

  /** The bot's id (from the options, or one `auth()` shared by concurrent callers). */
  async botId(): Promise<string> {
    if (this.#botId) return this.#botId;
    this.#auth ??= this.auth().finally(() => (this.#auth = undefined));
    return (await this.#auth).bot_id;
  }

  // --- messages -------------------------------------------------------------------------------

  /** Posts into a channel, topic or DM room the bot belongs to (scope messages:write). */
  async sendMessage(input: SendMessageInput, opts?: CallOptions): Promise<Message> {
    const i = input as SendMessageInput & { channelId?: string; topicId?: string; dmRoomId?: string };
    return this.sendMessageTool(
      {
        channel_id: i.channelId,
        topic_id: i.topicId,
        dm_room_id: i.dmRoomId,
        content: i.content,
        ...(i.contentHtml !== undefined ? { content_html: i.contentHtml } : {}),
        ...(i.actions !== undefined ? { actions: i.actions } : {}),
      } as SendMessageArgs,
      opts,
    );
  }

  /** Tool `send_message` with the tool's own arguments (snake_case). */
  async sendMessageTool(args: SendMessageArgs, opts?: CallOptions): Promise<Message> {
    const { channel_id, topic_id, dm_room_id, ...body } = args as SendMessageArgs & {
      channel_id?: string;
      topic_id?: string;
      dm_room_id?: string;
    };
    return this.#http.request<Message>(
      { method: 'POST', path: containerPath({ channel_id, topic_id, dm_room_id }), body, idempotent: true },
      opts,
    );
  }

  /**
   * Replaces a message the bot sent (PUT: omitting contentHtml clears it; omitting actions keeps them,
   * `actions: null` removes them); emits message.updated, which every client shows live.
   */
  async updateMessage(messageId: string, input: UpdateMessageInput, opts?: CallOptions): Promise<Message> {
    return this.#http.request<Message>(
      {
        method: 'PUT',
        path: `/api/messages/${enc(messageId)}`,
        body: {
          content: input.content,
          ...(input.contentHtml !== undefined ? { content_html: input.contentHtml } : {}),
          ...(input.actions !== undefined ? { actions: input.actions } : {}),
        },
        idempotent: true,
      },
      opts,
    );
  }

  /** Soft-deletes a message the bot sent; emits message.deleted. */
  async deleteMessage(messageId: string, opts?: CallOptions): Promise<DeletedMessage> {
    return this.#http.request({ method: 'DELETE', path: `/api/messages/${enc(messageId)}` }, opts);
  }

  /** A direct message to a user of the bot's organization (the DM room is created on first use). */
  async sendDm(input: SendDmInput, opts?: CallOptions): Promise<DmMessage> {
    const botId = await this.botId();
    return this.#http.request<DmMessage>(
      {
        method: 'POST',
        path: `/api/bots/${enc(botId)}/dm-messages`,
        body: {
          user_id: input.userId,
          content: input.content,
          ...(input.contentHtml !== undefined ? { content_html: input.contentHtml } : {}),
          ...(input.actions !== undefined ? { actions: input.actions } : {}),
        },
        idempotent: true,
      },
      opts,
    );
  }

  // --- custom (slash) commands ---------------------------------------------------------------

  /** Registers `/command` (scope bots:commands:write); 409 `conflict` if the bot has it already. */
  async registerCommand(input: RegisterCommandInput, opts?: CallOptions): Promise<Command> {
    const botId = await this.botId();
    return this.#http.request<Command>(
      {
        method: 'POST',
        path: `/api/bots/${enc(botId)}/commands`,
        body: {
          command: input.command,
          description: input.description,
          ...(input.usageHint !== undefined ? { usage_hint: input.usageHint } : {}),
        },
      },
      opts,
    );
  }

  async listCommands(opts?: CallOptions): Promise<CommandList> {
    const botId = await this.botId();
    return this.#http.request({ method: 'GET', path: `/api/bots/${enc(botId)}/commands` }, opts);
  }

  async deleteCommand(command: string, opts?: CallOptions): Promise<DeletedCommand> {
    const botId = await this.botId();
    return this.#http.request(
      { method: 'DELETE', path: `/api/bots/${enc(botId)}/commands/${enc(command)}` },
      opts,
    );
  }

  /**
   * A (further) reply to a slash command after the receiver has answered: long work replies here.
   * `invocation` is the command.invoked data (its `response_url`: 30 minutes, 5 replies). The URL's
   * path is sent to this client's baseUrl, so a server behind another public URL works too.
   */
  async respondToCommand(
    invocation: { response_url?: string | undefined },
    reply: CommandResponseInput,
    opts?: CallOptions,
  ): Promise<CommandResponse> {
    const url = invocation.response_url;
    if (!url) throw new TypeError('This command invocation has no response_url');
    const path = new URL(url).pathname;
    if (!path.startsWith('/api/commands/responses/'))
      throw new TypeError(`Not a command response URL: ${url}`);
    return this.#http.request<CommandResponse>(
      {
        method: 'POST',
        path,
        body: {
          content: reply.content,
          ...(reply.contentHtml !== undefined ? { content_html: reply.contentHtml } : {}),
          ...(reply.ephemeral !== undefined ? { ephemeral: reply.ephemeral } : {}),
        },
      },
      opts,
    );
  }

  // --- the MCP tools, through their REST twins (arguments exactly as the tools take them) ----

  /** Tool `read_messages` (messages:read): newest first. */
  async readMessages(args: ReadMessagesArgs, opts?: CallOptions): Promise<MessageList> {
    const { channel_id, topic_id, dm_room_id, ...query } = args as ReadMessagesArgs & {
      channel_id?: string;
      topic_id?: string;
      dm_room_id?: string;
    };
    return this.#http.request(
      { method: 'GET', path: containerPath({ channel_id, topic_id, dm_room_id }), query },
      opts,
    );
  }

  /** Tool `list_channels` (channels:read): channels, projects and topics the bot reaches. */
  async listChannels(args: ListChannelsArgs = {}, opts?: CallOptions): Promise<Containers> {
    return this.#http.request({ method: 'GET', path: '/api/containers', query: args }, opts);
  }

  /** Tool `create_task` (tasks:write); idempotent like sendMessage. */
  async createTask(args: CreateTaskArgs, opts?: CallOptions): Promise<Task> {
    const { topic_id, ...body } = args;
    return this.#http.request(
      { method: 'POST', path: `/api/topics/${enc(topic_id)}/tasks`, body, idempotent: true },
      opts,
    );
  }

  /** Tool `update_task` (tasks:write). */
  async updateTask(args: UpdateTaskArgs, opts?: CallOptions): Promise<Task> {
    const { task_id, ...body } = args;
    return this.#http.request({ method: 'PATCH', path: `/api/tasks/${enc(task_id)}`, body }, opts);
  }

  /** Tool `list_tasks` (tasks:read). */
  async listTasks(args: ListTasksArgs, opts?: CallOptions): Promise<TaskList> {
    const { topic_id, ...query } = args;
    return this.#http.request({ method: 'GET', path: `/api/topics/${enc(topic_id)}/tasks`, query }, opts);
  }

  /** Tool `search` (any scope). */
  async search(args: SearchArgs, opts?: CallOptions): Promise<SearchResult> {
    return this.#http.request({ method: 'GET', path: '/api/search', query: args }, opts);
  }

  /** Tool `get_user_info` (users:read). */
  async getUserInfo(args: GetUserInfoArgs, opts?: CallOptions): Promise<User> {
    return this.#http.request({ method: 'GET', path: `/api/users/${enc(args.user_id)}` }, opts);
  }

  /** Tool `list_users` (users:read). */
  async listUsers(args: ListUsersArgs = {}, opts?: CallOptions): Promise<UserList> {
    return this.#http.request({ method: 'GET', path: '/api/users', query: args }, opts);
  }

  /**
   * Runs an MCP tool by name with the tool's own arguments (e.g. from a model's tool call), through
   * its REST twin. The server validates the arguments as the tool would (400 `invalid_input`).
   */
  async callTool(name: ToolName, args: Record<string, unknown>, opts?: CallOptions): Promise<unknown> {
    const run = TOOLS[name];
    if (!run) throw new TypeError(`Unknown tool ${String(name)}`);
    return run(this, args as never, opts); // checked by the server, as the tool checks them
  }
}

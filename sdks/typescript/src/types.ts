import type { paths } from './generated/api.js';

/**
 * Request and response types of the client, all derived from the generated `paths` (from the
 * committed docs/api/openapi.json), so a server change that is not reflected here fails to compile.
 */

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** The operation object of `M path`, e.g. `Operation<'/api/messages/{id}', 'put'>`. */
export type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

type Json<R> = R extends { content: { 'application/json': infer J } } ? J : never;
/** The JSON body of an operation's success answer (200, 201 or 202). */
export type ResultOf<O> = O extends { responses: infer R }
  ? Json<R[Extract<keyof R, 200 | 201 | 202>]>
  : never;
/** The JSON request body of an operation. */
export type BodyOf<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
/** The query parameters of an operation. */
export type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

export type BotInfo = ResultOf<Operation<'/api/bots/auth', 'post'>>;
export type Message = ResultOf<Operation<'/api/channels/{channelId}/messages', 'post'>>;
export type DmMessage = ResultOf<Operation<'/api/bots/{botId}/dm-messages', 'post'>>;
export type DeletedMessage = ResultOf<Operation<'/api/messages/{id}', 'delete'>>;
export type Command = ResultOf<Operation<'/api/bots/{botId}/commands', 'post'>>;
export type CommandList = ResultOf<Operation<'/api/bots/{botId}/commands', 'get'>>;
export type DeletedCommand = ResultOf<Operation<'/api/bots/{botId}/commands/{commandName}', 'delete'>>;
export type MessageList = ResultOf<Operation<'/api/channels/{channelId}/messages', 'get'>>;
export type Containers = ResultOf<Operation<'/api/containers', 'get'>>;
export type Task = ResultOf<Operation<'/api/topics/{topicId}/tasks', 'post'>>;
export type TaskList = ResultOf<Operation<'/api/topics/{topicId}/tasks', 'get'>>;
export type SearchResult = ResultOf<Operation<'/api/search', 'get'>>;
export type User = ResultOf<Operation<'/api/users/{userId}', 'get'>>;
export type UserList = ResultOf<Operation<'/api/users', 'get'>>;
export type CommandResponse = ResultOf<Operation<'/api/commands/responses/{token}', 'post'>>;

type RespondBody = BodyOf<Operation<'/api/commands/responses/{token}', 'post'>>;
export interface CommandResponseInput {
  content: RespondBody['content'];
  contentHtml?: RespondBody['content_html'];
  /** Shown only to the user who ran the command. */
  ephemeral?: RespondBody['ephemeral'];
}

/** Exactly one target container. */
export type Target = { channelId: string } | { topicId: string } | { dmRoomId: string };

type SendBody = BodyOf<Operation<'/api/channels/{channelId}/messages', 'post'>>;
type EditBody = BodyOf<Operation<'/api/messages/{id}', 'put'>>;
type RegisterBody = BodyOf<Operation<'/api/bots/{botId}/commands', 'post'>>;
type DmBody = BodyOf<Operation<'/api/bots/{botId}/dm-messages', 'post'>>;

/**
 * A button or select a bot puts on its message (docs/ACTIONS.md): at most 10 per message, ids unique
 * within it; users' clicks arrive as `action.invoked` (`receiver.action(...)`).
 */
export type MessageActionInput = NonNullable<SendBody['actions']>[number];
export type ButtonActionInput = Extract<MessageActionInput, { type: 'button' }>;
export type SelectActionInput = Extract<MessageActionInput, { type: 'select' }>;
/** An action as messages and events show it (normalized: `style` and `placeholder` always present). */
export type MessageAction = NonNullable<Message['actions']>[number];

export type SendMessageInput = {
  content: SendBody['content'];
  contentHtml?: SendBody['content_html'];
  /** Buttons and selects under the message (bots only). */
  actions?: SendBody['actions'];
} & Target;
export interface UpdateMessageInput {
  content: EditBody['content'];
  /** Omitting it clears the HTML body (PUT replaces). */
  contentHtml?: EditBody['content_html'];
  /** Replaces the message's actions; `null` or `[]` removes them; omitted keeps them as they are. */
  actions?: EditBody['actions'];
}
export interface SendDmInput {
  userId: DmBody['user_id'];
  content: DmBody['content'];
  contentHtml?: DmBody['content_html'];
  actions?: DmBody['actions'];
}
export interface RegisterCommandInput {
  command: RegisterBody['command'];
  description: RegisterBody['description'];
  usageHint?: RegisterBody['usage_hint'];
}

// The MCP tools' arguments, exactly as the tools take them (snake_case), so that a model's tool call
// can be passed straight through: the REST twin's body or query plus its path parameter as a field.
type ContainerArgs = { channel_id: string } | { topic_id: string } | { dm_room_id: string };
export type SendMessageArgs = SendBody & ContainerArgs;
export type ReadMessagesArgs = Omit<
  QueryOf<Operation<'/api/channels/{channelId}/messages', 'get'>>,
  'topic_id' | 'dm_room_id'
> &
  ContainerArgs;
export type ListChannelsArgs = QueryOf<Operation<'/api/containers', 'get'>>;
export type CreateTaskArgs = BodyOf<Operation<'/api/topics/{topicId}/tasks', 'post'>> & { topic_id: string };
export type UpdateTaskArgs = BodyOf<Operation<'/api/tasks/{taskId}', 'patch'>> & { task_id: string };
export type ListTasksArgs = QueryOf<Operation<'/api/topics/{topicId}/tasks', 'get'>> & { topic_id: string };
export type SearchArgs = QueryOf<Operation<'/api/search', 'get'>>;
export type GetUserInfoArgs = { user_id: string };
export type ListUsersArgs = QueryOf<Operation<'/api/users', 'get'>>;

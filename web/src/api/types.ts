import type { paths } from './schema';

/**
 * Shapes of the API, derived from the OpenAPI document's generated types (never written by hand):
 * `Body<path, method, status>` is the JSON answer of that operation.
 */
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
export type Body<P extends keyof paths, M extends Method, S extends number = 200> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer T } } };
}
  ? T
  : never;
export type Input<P extends keyof paths, M extends Method> = paths[P][M] extends {
  requestBody?: { content: { 'application/json': infer T } };
}
  ? T
  : never;

export type User = Body<'/api/auth/me', 'get'>;
export type Login = Body<'/api/auth/login', 'post'>;
type ListedMessage = Body<'/api/channels/{channelId}/messages', 'get'>['items'][number];
/** A message as listed (with its reactions) or as sent, edited or pushed live (without them). */
export type Message = Omit<ListedMessage, 'reactions'> & { reactions?: ListedMessage['reactions'] };
export type Reaction = ListedMessage['reactions'][number];
export type Channel = Body<'/api/channels', 'get'>['items'][number];
export type Project = Body<'/api/projects', 'get'>['items'][number];
export type Topic = Body<'/api/projects/{projectId}/topics', 'get'>['items'][number];
export type DmRoom = Body<'/api/dm-rooms', 'get'>['items'][number];
export type Command = Body<'/api/commands', 'get'>['items'][number];
export type CommandResult = Body<'/api/commands/execute', 'post'>;
export type Mention = Body<'/api/mentions/users', 'get'>['items'][number];
export type Bot = Body<'/api/bots', 'get'>['items'][number];
export type BotInput = Input<'/api/bots', 'post'>;
export type EventType = NonNullable<BotInput['events']>[number];
export type ApiKey = Body<'/api/bots/{botId}/api-keys', 'get'>['items'][number];
export type NewApiKey = Body<'/api/bots/{botId}/api-keys', 'post', 201>;
export type KeyInput = Input<'/api/bots/{botId}/api-keys', 'post'>;
export type Scope = NonNullable<KeyInput['scopes']>[number];
export type KeyGrants = NonNullable<KeyInput['grants']>;
export type GrantTool = NonNullable<KeyGrants['tools']>[number];
export type BotCommand = Body<'/api/bots/{botId}/commands', 'get'>['items'][number];
export type UserListItem = Body<'/api/users', 'get'>['items'][number];
export type Task = Body<'/api/topics/{topicId}/tasks', 'get'>['items'][number];
export type TaskInput = Input<'/api/topics/{topicId}/tasks', 'post'>;
export type TaskPatch = Input<'/api/tasks/{taskId}', 'patch'>;
export type TaskStatus = NonNullable<TaskPatch['status']>;
export type Priority = NonNullable<TaskPatch['priority']>;
export type BuiltinBot = Body<'/api/builtin-bots', 'get'>['items'][number];
export type BotStatus = NonNullable<Input<'/api/bots/{botId}', 'patch'>['status']>;
export type Organization = Body<'/api/organizations', 'get'>['items'][number];

/**
 * The lists `virtual:openapi-lists` (vite.config.ts) reads from the committed OpenAPI document at build
 * time, typed by the same document's generated types.
 */
declare module 'virtual:openapi-lists' {
  // An ambient module may not import a relative module; an import() type may name it.
  // eslint-disable-next-line @typescript-eslint/consistent-type-imports
  type paths = import('./api/schema').paths;
  type Body<P extends keyof paths, M extends 'post' | 'patch'> = paths[P][M] extends {
    requestBody?: { content: { 'application/json': infer T } };
  }
    ? T
    : never;
  type Query<P extends keyof paths> = paths[P]['get'] extends { parameters: { query?: infer Q } }
    ? NonNullable<Q>
    : never;
  export const EVENT_TYPES: readonly NonNullable<Body<'/api/bots', 'post'>['events']>[number][];
  export const SCOPES: readonly NonNullable<Body<'/api/bots/{botId}/api-keys', 'post'>['scopes']>[number][];
  export const ROLES: readonly NonNullable<Body<'/api/users', 'post'>['role']>[];
  export const USER_STATUSES: readonly NonNullable<Body<'/api/users/{userId}', 'patch'>['status']>[];
  export const FILE_TYPES: readonly NonNullable<Query<'/api/channels/{channelId}/files'>['type']>[];
  export const GRANT_TOOLS: readonly NonNullable<
    NonNullable<Body<'/api/bots/{botId}/api-keys', 'post'>['grants']>['tools']
  >[number][];
  export const FILE_SORTS: readonly NonNullable<Query<'/api/channels/{channelId}/files'>['sort']>[];
}

/** Every limit of the spec's Limits table, in one place. */
export const LIMITS = {
  messageContent: 50_000,
  messageContentHtml: 50_000,
  readMessages: { default: 20, max: 100 },
  search: { default: 10, max: 50 },
  listUsers: { default: 50, max: 200 },
  bookmarks: { default: 50, max: 100 },
  channelFiles: { default: 20, max: 100 },
  fileQuery: 200,
  commandName: 100,
  commandDescription: 500,
  commandUsageHint: 500,
  slashCommandText: 1000,
  // Not in the spec; chosen so that names stay displayable.
  name: 200,
  description: 2000,
  taskTitle: 500,
  taskDescription: 50_000,
} as const;

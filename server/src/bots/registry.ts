import { pollBot } from './poll/bot.js';
import { notificationsBot } from './notifications.js';
import { searchBot } from './search.js';
import { tasksBot } from './tasks.js';
import { collectBot } from './collect/bot.js';
import { standupBot } from './standup/bot.js';
import { taskNotifyBot } from './task-notify/bot.js';
import { approvalsBot } from './approvals.js';
import type { BuiltinBot } from './types.js';

/**
 * Every built-in bot of the server. A new one is a definition file `bots/<name>.ts` exporting a
 * `BuiltinBot`, added here: at the next start it is installed in every organization (and in every
 * new one), its commands appear in the slash palette, and its handlers run (docs/BUILTIN-BOTS.md).
 */
export const BUILTIN_BOTS: readonly BuiltinBot[] = [
  searchBot,
  tasksBot,
  notificationsBot,
  pollBot,
  standupBot,
  collectBot,
  taskNotifyBot,
  approvalsBot,
];

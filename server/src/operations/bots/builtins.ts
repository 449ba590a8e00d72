import { z } from 'zod';
import { AppError, notFound } from '../../domain/errors.js';
import { EVENT_TYPES, type EventType } from '../../domain/events.js';
import { newId } from '../../domain/ids.js';
import { LIMITS } from '../../domain/limits.js';
import type { Role } from '../../domain/roles.js';
import type { Scope } from '../../domain/scopes.js';
import type { BotRow } from '../../storage/schema.js';
import { isSystemAdmin } from '../access.js';
import type { Services } from '../context.js';
import { BUILTIN_COMMANDS, COMMAND_NAME_RE } from '../commands/custom-commands.js';
import { defineOperation } from '../operation.js';
import { uuid } from '../schemas.js';
import { listOf } from '../views.js';
import { outsideRequest, write, type WriteTx } from '../write.js';

/**
 * Built-in bots (docs/BUILTIN-BOTS.md): system bots (search, tasks, notifications) and platform bots
 * (stand-up, poll, …) whose code runs inside the server (`bots/`). This file is their operations side:
 *
 * - the catalogue: what each built-in bot is (key, type, name, subscribed events, commands, scopes),
 *   handed to the operations as `Services.builtins` by app.ts, so that the operations never import
 *   `bots/` (the dependency rule) and yet install and describe every built-in bot;
 * - installation: one `bots` row per organization and built-in bot (`builtin` = its key, no creator,
 *   no webhook URL, no keys), created idempotently at start for every organization and in the
 *   transaction that creates an organization; its commands are rows of `bot_commands`, kept in step
 *   with the code;
 * - management: a system_admin lists the built-in bots and enables or disables one everywhere.
 */

export interface BuiltinCommandSpec {
  /** Without the slash, lower case: letters, digits, '_' and '-'. */
  name: string;
  description: string;
  /** e.g. "/search <terms> [in:#channel] [from:@user] [type:messages]" */
  usage: string;
}

export interface BuiltinBotSpec {
  /** Stable identifier, stored in bots.builtin: lower case letters, digits and '-' (e.g. "search"). */
  key: string;
  type: 'system' | 'platform';
  /** Shown as the bot's name (a system_admin may rename a row afterwards). */
  name: string;
  description: string;
  /** Events delivered where the bot is a member (a channel, a project's topics, a DM room), as for webhooks. */
  events: readonly EventType[];
  /**
   * Events delivered from anywhere in its own organization, member or not (system bots only: they are
   * part of the server, like the search index; e.g. the notifications bot hears every mention).
   */
  orgEvents?: readonly EventType[];
  commands: readonly BuiltinCommandSpec[];
  /** The scopes of the bot's actor (never empty: an empty list would mean every scope). */
  scopes: readonly Scope[];
}

const KEY_RE = /^[a-z][a-z0-9-]{0,39}$/;

/** Every built-in bot of this server, checked once at start (a mistake in a definition fails fast). */
export class BuiltinCatalogue {
  readonly #byKey = new Map<string, BuiltinBotSpec>();
  readonly #orgEvents = new Map<string, ReadonlySet<string>>();

  constructor(specs: readonly BuiltinBotSpec[] = []) {
    const commandOwners = new Map<string, string>();
    for (const s of specs) {
      const bad = (why: string) => new Error(`built-in bot ${JSON.stringify(s.key)}: ${why}`);
      if (!KEY_RE.test(s.key)) throw bad('key must be lower-case letters, digits and "-"');
      if (this.#byKey.has(s.key)) throw bad('key used twice');
      if (s.name.trim() === '' || s.name.length > LIMITS.name) throw bad('name empty or too long');
      if (s.scopes.length === 0) throw bad('scopes must not be empty (an empty list means every scope)');
      for (const e of [...s.events, ...(s.orgEvents ?? [])])
        if (!(EVENT_TYPES as readonly string[]).includes(e)) throw bad(`unknown event type ${e}`);
      if (s.orgEvents?.length && s.type !== 'system') throw bad('only system bots receive orgEvents');
      const names = new Set<string>();
      for (const c of s.commands) {
        if (!COMMAND_NAME_RE.test(c.name) || c.name.length > LIMITS.commandName)
          throw bad(`bad command name ${c.name}`);
        if ((BUILTIN_COMMANDS as readonly string[]).includes(c.name))
          throw bad(`/${c.name} is a built-in slash command`);
        if (names.has(c.name)) throw bad(`command /${c.name} listed twice`);
        const other = commandOwners.get(c.name);
        if (other) throw bad(`command /${c.name} is also the built-in bot ${other}'s`);
        if (c.description.length > LIMITS.commandDescription || c.usage.length > LIMITS.commandUsageHint)
          throw bad(`command /${c.name}: description or usage too long`);
        names.add(c.name);
        commandOwners.set(c.name, s.key);
      }
      this.#byKey.set(s.key, s);
      this.#orgEvents.set(s.key, new Set(s.orgEvents ?? []));
    }
  }

  list(): readonly BuiltinBotSpec[] {
    return [...this.#byKey.values()];
  }

  get(key: string): BuiltinBotSpec | undefined {
    return this.#byKey.get(key);
  }

  /** Event types the built-in bot `key` receives from its whole organization (fan-out). */
  orgEventsOf(key: string): ReadonlySet<string> {
    return this.#orgEvents.get(key) ?? new Set();
  }
}

/** The row's `events`: everything the bot hears (member-scoped and organization-wide). */
const eventsJson = (s: BuiltinBotSpec) =>
  JSON.stringify([...new Set([...s.events, ...(s.orgEvents ?? [])])].sort());

/**
 * A new organization's row of a built-in bot starts disabled when the bot is disabled in every
 * organization that has it (a system_admin switched it off everywhere), else active.
 */
async function initialStatuses(tx: WriteTx): Promise<Map<string, BotRow['status']>> {
  const counts = await tx.stores.bots.builtinStatusCounts();
  const active = new Set(counts.filter((c) => c.status === 'active' && c.n > 0).map((c) => c.builtin));
  const out = new Map<string, BotRow['status']>();
  for (const c of counts) if (!active.has(c.builtin)) out.set(c.builtin, 'disabled');
  return out;
}

/**
 * Installs every built-in bot in one organization, in the caller's transaction: creates the missing
 * rows, and brings the subscribed events and the commands of existing rows in step with the code.
 * Idempotent (run at every start and by organization creation). Name, description and status of an
 * existing row are the system_admin's and are left alone. Returns how many rows it created.
 */
export async function installBuiltinsIn(
  tx: WriteTx,
  catalogue: BuiltinCatalogue,
  orgId: string,
  statuses?: Map<string, BotRow['status']>,
): Promise<number> {
  const specs = catalogue.list();
  if (specs.length === 0) return 0;
  const initial = statuses ?? (await initialStatuses(tx));
  let created = 0;
  for (const spec of specs) {
    let row = await tx.stores.bots.getBuiltin(orgId, spec.key);
    if (!row) {
      const fresh: BotRow = {
        id: newId(),
        org_id: orgId,
        type: spec.type,
        name: spec.name,
        description: spec.description,
        webhook_url: null,
        events: eventsJson(spec),
        created_by: null,
        status: initial.get(spec.key) ?? 'active',
        builtin: spec.key,
        created_at: tx.now,
        updated_at: tx.now,
        deleted_at: null,
      };
      if (await tx.stores.bots.insertBuiltin(fresh)) created++;
      row = await tx.stores.bots.getBuiltin(orgId, spec.key);
      if (!row) continue;
    }
    if (row.deleted_at !== null) continue; // deleting is refused; a row deleted anyway stays so
    if (row.events !== eventsJson(spec)) {
      await tx.stores.bots.update(row.id, { events: eventsJson(spec) }, tx.now);
    }
    const existing = new Map((await tx.stores.commands.listForBot(row.id)).map((c) => [c.command, c]));
    for (const c of spec.commands) {
      const have = existing.get(c.name);
      existing.delete(c.name);
      if (!have) {
        await tx.stores.commands.insert({
          id: newId(),
          bot_id: row.id,
          org_id: orgId,
          command: c.name,
          description: c.description,
          usage_hint: c.usage,
          created_at: tx.now,
          updated_at: tx.now,
        });
      } else if (have.description !== c.description || have.usage_hint !== c.usage) {
        await tx.stores.commands.update(have.id, { description: c.description, usage_hint: c.usage }, tx.now);
      }
    }
    for (const gone of existing.keys()) await tx.stores.commands.delete(row.id, gone);
  }
  return created;
}

/** Installs the built-in bots in one organization (its own transaction). */
export function installBuiltins(services: Services, orgId: string): Promise<number> {
  return write(outsideRequest(services), (tx) => installBuiltinsIn(tx, services.builtins, orgId));
}

/**
 * Installs the built-in bots in every organization, one transaction per organization (called by the
 * built-in bot runtime at start). Returns how many rows it created.
 */
export async function installBuiltinsEverywhere(services: Services): Promise<number> {
  if (services.builtins.list().length === 0) return 0;
  const orgs = await services.storage.stores.orgs.list();
  const statuses = await write(outsideRequest(services), (tx) => initialStatuses(tx));
  let created = 0;
  for (const org of orgs) {
    created += await write(outsideRequest(services), (tx) =>
      installBuiltinsIn(tx, services.builtins, org.id, statuses),
    );
  }
  return created;
}

/** A built-in bot's row as the runtime sees it (bots/ does not import storage/). */
export type BuiltinBotRow = BotRow;

/** A built-in bot's row, for the runtime: undefined when it is not a built-in bot or is deleted. */
export async function loadBuiltinBot(services: Services, botId: string): Promise<BotRow | undefined> {
  const row = await services.storage.stores.bots.get(botId);
  return row && row.builtin !== null ? row : undefined;
}

/** The organization's row of a built-in bot (the runtime's lookup by key), if installed. */
export async function findBuiltinBot(
  services: Services,
  orgId: string,
  key: string,
): Promise<BotRow | undefined> {
  const row = await services.storage.stores.bots.getBuiltin(orgId, key);
  return row && row.deleted_at === null ? row : undefined;
}

// --- management (system_admin) ---

export const BuiltinBotView = z.object({
  key: z.string(),
  type: z.enum(['system', 'platform']),
  name: z.string(),
  description: z.string(),
  events: z.array(z.string()).describe('Delivered where the bot is a member'),
  org_events: z.array(z.string()).describe('Delivered from anywhere in its organization'),
  commands: z.array(z.object({ command: z.string(), description: z.string(), usage_hint: z.string() })),
  status: z
    .enum(['active', 'disabled', 'mixed'])
    .describe('active or disabled in every organization, or mixed (switched per organization)'),
  organizations: z
    .object({ active: z.number().int(), disabled: z.number().int() })
    .describe('How many organizations have it active and disabled'),
});
type BuiltinBotView = z.infer<typeof BuiltinBotView>;

function builtinView(spec: BuiltinBotSpec, counts: Map<string, { active: number; disabled: number }>) {
  const c = counts.get(spec.key) ?? { active: 0, disabled: 0 };
  const status: BuiltinBotView['status'] =
    c.disabled === 0 ? 'active' : c.active === 0 ? 'disabled' : 'mixed';
  return {
    key: spec.key,
    type: spec.type,
    name: spec.name,
    description: spec.description,
    events: [...spec.events],
    org_events: [...(spec.orgEvents ?? [])],
    commands: spec.commands.map((x) => ({
      command: x.name,
      description: x.description,
      usage_hint: x.usage,
    })),
    status,
    organizations: c,
  };
}

async function statusCounts(services: Services) {
  const out = new Map<string, { active: number; disabled: number }>();
  for (const r of await services.storage.stores.bots.builtinStatusCounts()) {
    const c = out.get(r.builtin) ?? { active: 0, disabled: 0 };
    if (r.status === 'active') c.active += r.n;
    else c.disabled += r.n;
    out.set(r.builtin, c);
  }
  return out;
}

function requireSystemAdmin(ctx: { actor: Parameters<typeof isSystemAdmin>[0] }): void {
  if (!isSystemAdmin(ctx.actor)) {
    throw new AppError('forbidden', 'Only a system_admin manages the built-in (system and platform) bots');
  }
}

const builtinKey = z
  .string({ message: 'must be a string' })
  .max(40, 'must be at most 40 characters')
  .describe('The built-in bot’s key, e.g. search');

export const listBuiltinBots = defineOperation({
  name: 'builtin_bots.list',
  summary:
    'The built-in (system and platform) bots of this server and whether each is enabled (system_admin)',
  input: z.strictObject({}),
  output: listOf(BuiltinBotView),
  actors: ['user'],
  async run(ctx) {
    requireSystemAdmin(ctx);
    const counts = await statusCounts(ctx.services);
    return { items: ctx.services.builtins.list().map((s) => builtinView(s, counts)) };
  },
});

export const updateBuiltinBot = defineOperation({
  name: 'builtin_bots.update',
  summary:
    'Enable or disable a built-in bot in every organization (system_admin). Disabled: its commands answer an error, it receives no events and runs no schedules.',
  input: z.strictObject({
    key: builtinKey,
    status: z.enum(['active', 'disabled'], { message: 'must be active or disabled' }),
  }),
  output: BuiltinBotView.extend({ changed: z.number().int().describe('Organizations whose row changed') }),
  actors: ['user'],
  async run(ctx, input) {
    requireSystemAdmin(ctx);
    const spec = ctx.services.builtins.get(input.key);
    if (!spec) throw notFound(`Built-in bot ${input.key}`);
    const changed = await write(ctx, async ({ stores, now }) => ({
      changed: await stores.bots.setBuiltinStatus(spec.key, input.status, now),
    }));
    return { ...builtinView(spec, await statusCounts(ctx.services)), ...changed };
  },
});

/**
 * For the runtime only (no route, no tool): who a user is, so that a built-in bot can run an operation
 * as that user (bots/runtime.ts `callAsUser`). Only a built-in bot may ask, and only about an active
 * user of its own organization.
 */
export const builtinUserActor = defineOperation({
  name: 'builtin_bots.user_actor',
  summary: 'Internal: the role and department of a user, for a built-in bot acting on their behalf',
  input: z.strictObject({ user_id: uuid('user') }),
  output: z.object({
    user_id: z.string(),
    org_id: z.string(),
    role: z.string(),
    department_id: z.string().nullable(),
  }),
  actors: ['bot'],
  scope: 'any',
  async run(ctx, input) {
    const { actor } = ctx;
    if (actor.kind !== 'bot') throw new AppError('forbidden', 'Only for built-in bots');
    const stores = ctx.services.storage.stores;
    const bot = await stores.bots.get(actor.botId);
    if (!bot || bot.builtin === null || bot.org_id !== actor.orgId) {
      throw new AppError('forbidden', 'Only a built-in bot acts on behalf of a user');
    }
    const user = await stores.users.get(input.user_id);
    if (!user || user.org_id !== actor.orgId) throw notFound('User');
    if (user.status !== 'active') throw new AppError('forbidden', 'The user is deactivated');
    return {
      user_id: user.id,
      org_id: user.org_id,
      role: user.role as Role,
      department_id: user.department_id,
    };
  },
});

import type { OpContext } from '../context.js';
import type { ToolCallDetail } from './tool-calls.js';

/**
 * The audit's detail of a call by a key with grants (issue 21, point 4; docs/API.md "Agent grants"):
 * the grant decision (allowed, or refused and by which grant), the dry-run flag, and for an update
 * (update_task, a message edit) the changed fields before and after. Keys without grants keep the
 * detail they had (a refusing grant or a dry run only), so their hot path does no more.
 */

/** Where an update puts its changed fields for the audit (created by the caller, filled by the operation). */
export interface AuditChange {
  before?: Record<string, unknown>;
  after?: Record<string, unknown>;
}

/** A field's value as the audit keeps it: long text cut to this many characters. */
const MAX_TEXT = 500;
const cut = (v: unknown): unknown =>
  typeof v === 'string' && v.length > MAX_TEXT ? `${v.slice(0, MAX_TEXT)}… (${v.length} characters)` : v;

/**
 * Notes the fields an update changes (their values before and after), when the caller audits this
 * call (a key with grants). `after` holds the changed fields only.
 */
export function noteChange(
  ctx: Pick<OpContext, 'auditChange'>,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): void {
  const holder = ctx.auditChange;
  if (!holder) return;
  const keys = Object.keys(after).filter((k) => before[k] !== after[k]);
  if (keys.length === 0) return;
  holder.before = Object.fromEntries(keys.map((k) => [k, cut(before[k] ?? null)]));
  holder.after = Object.fromEntries(keys.map((k) => [k, cut(after[k] ?? null)]));
}

/** Error codes by which a key's grants or guard rails refuse a call. */
export const GRANT_REFUSALS: ReadonlySet<string> = new Set([
  'grant_denied',
  'approval_required',
  'confirmation_required',
  'write_budget_exceeded',
  'key_paused',
]);

/** What the grants decided, from the call's error code (null: it ran). */
function decisionOf(code: string | null): NonNullable<ToolCallDetail['decision']> {
  if (code === null) return 'allowed';
  if (code === 'pending_approval') return 'pending_approval'; // held for a human (grant approval)
  if (code === 'input_required') return 'confirmation_asked'; // the agent's user is asked (grant confirm)
  if (code === 'declined') return 'declined'; // the agent's user said no
  return GRANT_REFUSALS.has(code) ? 'refused' : 'allowed';
}

/**
 * The detail of an audited call: for a key with grants its decision (refused when a grant, a budget
 * or a pause refused it; held for approval; asked or declined by the agent's user; else allowed), the refusing grant, the dry-run flag and the change; for a key
 * without, the refusing grant or the dry-run flag as before (undefined when neither).
 */
export function callDetail(
  hasGrants: boolean,
  o: {
    grant?: string | undefined;
    dryRun: boolean;
    errorCode: string | null;
    change?: AuditChange | undefined;
    surface?: ToolCallDetail['surface'];
  },
): ToolCallDetail | undefined {
  const dry_run = o.dryRun ? (true as const) : undefined;
  if (!hasGrants)
    return o.grant !== undefined || o.dryRun || o.surface !== undefined
      ? { surface: o.surface, grant: o.grant, dry_run }
      : undefined;
  return {
    surface: o.surface,
    decision: decisionOf(o.errorCode),
    grant: o.grant,
    dry_run,
    before: o.change?.before,
    after: o.change?.after,
  };
}

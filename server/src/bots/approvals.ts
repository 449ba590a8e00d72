import { isAppError } from '../domain/errors.js';
import {
  approvePendingAction,
  parseCardValue,
  rejectPendingAction,
} from '../operations/approvals/pending-actions.js';
import type { BuiltinBot } from './types.js';

/**
 * The Approvals bot (system; docs/API.md "Approval"): its DMs are the approvers' cards of pending
 * actions (sent by operations/approvals/pending-actions.ts in the transaction that creates the pending
 * action), and a click on Approve or Reject comes back here as `action.invoked`: the decision runs as
 * the user who clicked, so it is theirs to make (the bot's owner, an approver named on the grant, or
 * an org admin), exactly as POST /api/pending-actions/{id}/approve. The card is edited with the outcome.
 */
export const approvalsBot: BuiltinBot = {
  key: 'approvals',
  type: 'system',
  name: 'Approvals',
  description: "Asks for a human's approval of a bot's actions that its API key's grants hold back",
  events: [],
  commands: [],
  scopes: ['messages:write'],

  async onAction(ctx, action) {
    const card = parseCardValue(action.value);
    if (!card) return;
    const op = card.decision === 'approve' ? approvePendingAction : rejectPendingAction;
    try {
      await ctx.callAsUser(action.user_id, op, { id: card.id });
    } catch (err) {
      // Already decided the other way, expired, not theirs: the card shows (or will show) the outcome;
      // a retried delivery would answer the same.
      if (isAppError(err) && err.code !== 'internal' && err.code !== 'unavailable') {
        ctx.log.info({ err: err.message, pendingAction: card.id }, 'approval click refused');
        return;
      }
      throw err;
    }
  },
};

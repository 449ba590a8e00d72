import {
  approvePendingAction,
  getOwnPendingAction,
  getPendingAction,
  listPendingActions,
  rejectPendingAction,
} from '../../../operations/approvals/pending-actions.js';
import type { Route } from '../types.js';

const errorRef = { $ref: '#/components/responses/Error' };

/** Human approval of bots' calls (docs/API.md "Approval"): the approvers' queue and decisions, the bot's view. */
export const pendingActionRoutes: Route[] = [
  { method: 'GET', path: '/api/pending-actions', op: listPendingActions, tags: ['approval'] },
  { method: 'GET', path: '/api/pending-actions/{id}', op: getPendingAction, tags: ['approval'] },
  {
    method: 'POST',
    path: '/api/pending-actions/{id}/approve',
    op: approvePendingAction,
    responses: { 409: errorRef },
    tags: ['approval'],
  },
  {
    method: 'POST',
    path: '/api/pending-actions/{id}/reject',
    op: rejectPendingAction,
    responses: { 409: errorRef },
    tags: ['approval'],
  },
  {
    method: 'GET',
    path: '/api/bots/me/pending-actions/{pendingActionId}',
    op: getOwnPendingAction,
    tags: ['approval'],
  },
];

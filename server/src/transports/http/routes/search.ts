import { search } from '../../../operations/search/search.js';
import type { Route } from '../types.js';

/** Search over messages, tasks and files (the REST twin of the MCP search tool). */
export const searchRoutes: Route[] = [{ method: 'GET', path: '/api/search', op: search, tags: ['search'] }];

import { createDmRoom, listDmRooms } from '../../../operations/containers/dm-rooms.js';
import type { Route } from '../types.js';

/** Direct-message rooms. */
export const dmRoomRoutes: Route[] = [
  { method: 'POST', path: '/api/dm-rooms', op: createDmRoom, status: 201, tags: ['dm-rooms'] },
  { method: 'GET', path: '/api/dm-rooms', op: listDmRooms, tags: ['dm-rooms'] },
];

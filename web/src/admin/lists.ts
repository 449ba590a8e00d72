/**
 * The spec's lists of subscribable events and key scopes (and the other value lists of the forms), as
 * values: read from the committed OpenAPI document at build time (`virtual:openapi-lists`, see
 * vite.config.ts) and typed by the document's generated types. Nothing here is copied by hand.
 */
export {
  EVENT_TYPES,
  FILE_SORTS,
  FILE_TYPES,
  GRANT_TOOLS,
  ROLES,
  SCOPES,
  USER_STATUSES,
} from 'virtual:openapi-lists';

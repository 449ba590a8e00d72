/** Bot key scopes, exactly as in the spec's Authentication table. */
export const SCOPES = [
  'messages:read',
  'messages:write',
  'channels:read',
  'tasks:read',
  'tasks:write',
  'users:read',
  'files:read',
  'files:write',
  'webhooks:write',
  'bots:commands:read',
  'bots:commands:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/** A key with no scopes (null or empty) reaches everything. */
export function scopesAllow(keyScopes: readonly string[] | null, needed: Scope | 'any'): boolean {
  if (needed === 'any' || keyScopes === null || keyScopes.length === 0) return true;
  return keyScopes.includes(needed);
}

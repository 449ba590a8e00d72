import type { User } from './types';

/**
 * The signed-in session: the bearer token of POST /api/auth/login and the user it belongs to, kept in
 * localStorage so that every tab of the app shares one sign-in and a reload keeps it (docs/WEB.md says
 * why that is acceptable: the token expires server-side, sign-out revokes it, and the page's CSP and
 * output sanitizing keep scripts from message content from ever running to read it).
 */
const KEY = 'workroom.session';

export interface Session {
  token: string;
  user: User;
}

export function loadSession(): Session | null {
  try {
    const raw = localStorage.getItem(KEY);
    if (raw === null) return null;
    const s = JSON.parse(raw) as Partial<Session>;
    return typeof s.token === 'string' && s.user !== undefined ? (s as Session) : null;
  } catch {
    return null;
  }
}

export function saveSession(s: Session | null): void {
  if (s === null) localStorage.removeItem(KEY);
  else localStorage.setItem(KEY, JSON.stringify(s));
}

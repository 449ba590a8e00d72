import { lazy, Suspense } from 'preact/compat';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, onSessionExpired, ok, setToken } from './api/client';
import { loadSession, saveSession, type Session } from './api/session';
import { Chat } from './chat/chat';
import { SignIn } from './signin';
import { applyTheme, initialTheme, type Theme } from './theme';

// The admin screen is its own chunk: the chat's initial JavaScript does not carry it.
const Admin = lazy(() => import('./admin/admin').then((m) => ({ default: m.Admin })));

export interface Shell {
  session: Session;
  theme: Theme;
  toggleTheme(): void;
  navigate(path: string): void;
  signOut(): void;
  /** Revokes every session of this person (POST /api/auth/logout-all) and signs out here. */
  signOutEverywhere(): void;
  /** After one's own password change (which revokes every session): signs in again with it. */
  renewSession(password: string): Promise<void>;
}

const path = () => (location.pathname.startsWith('/admin') ? '/admin' : '/');

export function App() {
  const [session, setSession] = useState<Session | null>(() => {
    const s = loadSession();
    setToken(s?.token ?? null);
    return s;
  });
  const [notice, setNotice] = useState<string | null>(null);
  const [route, setRoute] = useState(path);
  const [theme, setTheme] = useState<Theme>(initialTheme);

  useEffect(() => applyTheme(theme, false), []);
  useEffect(() => {
    const onPop = () => setRoute(path());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);

  const end = useCallback((message: string | null) => {
    saveSession(null);
    setToken(null);
    setSession(null);
    setNotice(message);
  }, []);
  useEffect(() => onSessionExpired(() => end('Your session has expired. Please sign in again.')), [end]);

  if (session === null) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          saveSession(s);
          setToken(s.token);
          setNotice(null);
          setSession(s);
        }}
      />
    );
  }

  const shell: Shell = {
    session,
    theme,
    toggleTheme() {
      const t = theme === 'dark' ? 'light' : 'dark';
      applyTheme(t, true);
      setTheme(t);
    },
    navigate(to) {
      history.pushState(null, '', to);
      setRoute(path());
    },
    signOut() {
      // Revoke the token server-side; signing out locally does not wait for (or need) the answer.
      void ok(api.POST('/api/auth/logout')).catch(() => undefined);
      end('You have signed out.');
    },
    signOutEverywhere() {
      void ok(api.POST('/api/auth/logout-all')).catch(() => undefined);
      end('You have signed out on every device.');
    },
    async renewSession(password) {
      const s = await ok(api.POST('/api/auth/login', { body: { email: session.user.email, password } }));
      const next = { token: s.token, user: s.user };
      saveSession(next);
      setToken(next.token);
      setSession(next);
    },
  };
  return route === '/admin' ? (
    <Suspense fallback={<p class="loading">Loading the administration screen…</p>}>
      <Admin shell={shell} />
    </Suspense>
  ) : (
    <Chat shell={shell} />
  );
}

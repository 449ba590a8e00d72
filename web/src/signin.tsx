import { useState } from 'preact/hooks';
import { api, ApiError, describe, ok } from './api/client';
import type { Session } from './api/session';

/** Sign-in with email and password; says plainly whether the password or the server is the problem. */
export function SignIn(props: { notice: string | null; onSignedIn(s: Session): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const r = await ok(api.POST('/api/auth/login', { body: { email, password } }));
      props.onSignedIn({ token: r.token, user: r.user });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401)
        setError('Wrong email or password. Please try again.');
      else if (err instanceof ApiError && err.status === 429)
        setError('Too many attempts. Wait a moment and try again.');
      else setError(describe(err));
      setBusy(false);
    }
  }

  return (
    <main class="signin">
      <form class="card" onSubmit={(e) => void submit(e)} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to Workroom</h1>
        {props.notice !== null && (
          <p class="notice" role="status">
            {props.notice}
          </p>
        )}
        <label for="signin-email">Email</label>
        <input
          id="signin-email"
          type="email"
          autocomplete="username"
          required
          value={email}
          onInput={(e) => setEmail(e.currentTarget.value)}
        />
        <label for="signin-password">Password</label>
        <input
          id="signin-password"
          type="password"
          autocomplete="current-password"
          required
          value={password}
          onInput={(e) => setPassword(e.currentTarget.value)}
        />
        {error !== null && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { newId, nowIso } from '../../domain/ids.js';
import { generateUserToken, hashSecret, verifyPassword } from '../../domain/secrets.js';
import type { Services } from '../context.js';
import { defineOperation } from '../operation.js';
import { UserView, userView } from '../views.js';

export const LoginInput = z.strictObject({
  email: z.string().min(1).max(320),
  password: z.string().min(1).max(1024),
});

export const LoginOutput = z.object({ token: z.string(), expires_at: z.string(), user: UserView });

/**
 * Password login: the one operation that runs without a caller. `clientAddress` is where the attempt
 * comes from, for the brute-force throttle (login-guard.ts).
 */
export async function login(services: Services, input: z.output<typeof LoginInput>, clientAddress: string) {
  const account = input.email.trim().toLowerCase();
  services.loginGuard.check(account, clientAddress);
  const user = await services.storage.stores.users.getByEmail(input.email);
  // Verify even when the user does not exist, so timing does not reveal which emails are registered.
  const ok = await services.loginGuard.hashing(() =>
    verifyPassword(input.password, user?.password_hash ?? DUMMY_HASH),
  );
  if (!user || !ok) {
    services.loginGuard.failed(account, clientAddress);
    throw new AppError('unauthenticated', 'Wrong email or password');
  }
  if (user.status !== 'active') throw new AppError('unauthenticated', 'This user is deactivated');
  const token = generateUserToken();
  const now = nowIso();
  const expires_at = new Date(Date.now() + services.config.sessionTtlMs).toISOString();
  await services.storage.stores.users.createToken({
    id: newId(),
    user_id: user.id,
    token_hash: hashSecret(token),
    created_at: now,
    expires_at,
    revoked_at: null,
  });
  return { token, expires_at, user: userView(user) };
}
const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';

export const logout = defineOperation({
  name: 'auth.logout',
  summary: 'Revoke the session token used for this request',
  input: z.strictObject({}),
  output: z.object({ ok: z.literal(true) }),
  actors: ['user'],
  async run(ctx) {
    if (ctx.actor.kind !== 'user') throw new AppError('forbidden', 'Only user sessions can log out');
    await ctx.services.storage.stores.users.revokeToken(ctx.actor.tokenId, nowIso());
    return { ok: true as const };
  },
});

export const me = defineOperation({
  name: 'auth.me',
  summary: 'The signed-in user',
  input: z.strictObject({}),
  output: UserView,
  actors: ['user'],
  async run(ctx) {
    if (ctx.actor.kind !== 'user') throw new AppError('forbidden', 'Only for users');
    const u = await ctx.services.storage.stores.users.get(ctx.actor.userId);
    if (!u) throw new AppError('unauthenticated', 'User no longer exists');
    return userView(u);
  },
});

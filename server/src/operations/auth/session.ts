import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import { newId } from '../../domain/ids.js';
import { generateUserToken, hashSecret, verifyPassword } from '../../domain/secrets.js';
import type { Services } from '../context.js';
import { defineOperation } from '../operation.js';
import { issueDeviceToken, verifyDeviceToken } from './device-token.js';
import { UserView, userView } from '../views.js';

export const LoginInput = z.strictObject({
  email: z.string().min(1).max(320),
  password: z.string().min(1).max(1024),
});

export const LoginOutput = z.object({
  token: z.string(),
  expires_at: z.string(),
  user: UserView,
  device_token: z.string().meta({
    description:
      'Proof that this client signed in to this account (valid 180 days): send it back on later sign-ins ' +
      '(header X-Workroom-Device; browsers get it as an HttpOnly cookie) so that failed attempts from ' +
      'elsewhere cannot throttle this client. It grants nothing without the password.',
  }),
});

/**
 * The largest sign-in body: every input LoginInput accepts fits, even with every character written as
 * a \uXXXX escape (6 bytes × (320 + 1,024) + the braces and keys < 8 KiB), so nothing valid is refused,
 * while a stranger can make the server hold no more than this per connection before anything is checked.
 */
export const LOGIN_MAX_BODY_BYTES = 8 * 1024;

/**
 * Password login: the one operation that runs without a caller. `clientAddress` is where the attempt
 * comes from and `deviceTokens` the device tokens the client presented (header, cookies), for the
 * brute-force throttle (login-guard.ts). A successful sign-in answers a new device token for this account.
 */
export async function login(
  services: Services,
  input: z.output<typeof LoginInput>,
  clientAddress: string,
  deviceTokens: readonly string[] = [],
) {
  const account = input.email.trim().toLowerCase();
  const users = services.storage.stores.users;
  const nowMs = services.clock.now(); // business time (runtime/clock.ts): expiry of tokens
  const claims = deviceTokens.flatMap((t) => verifyDeviceToken(services.encryptionKey, t, nowMs) ?? []);
  // Authentic tokens: whether one was issued to this account needs the account's id first.
  let user = claims.length > 0 ? await users.getByEmail(input.email) : undefined;
  const mine = claims.find((c) => c.userId === user?.id);
  const attempt = await services.loginGuard.admit(account, clientAddress, mine?.id);
  try {
    if (claims.length === 0) user = await users.getByEmail(input.email);
    // Verify even when the user does not exist, so timing does not reveal which emails are registered.
    const ok = await services.loginGuard.hashing(
      () => verifyPassword(input.password, user?.password_hash ?? DUMMY_HASH),
      attempt.recognized,
    );
    if (!user || !ok) {
      await attempt.failed();
      throw new AppError('unauthenticated', 'Wrong email or password');
    }
  } finally {
    await attempt.end();
  }
  if (user.status !== 'active') throw new AppError('unauthenticated', 'This user is deactivated');
  const token = generateUserToken();
  const signedInAt = services.clock.now();
  const now = new Date(signedInAt).toISOString();
  const expires_at = new Date(signedInAt + services.config.sessionTtlMs).toISOString();
  await users.createToken({
    id: newId(),
    user_id: user.id,
    token_hash: hashSecret(token),
    created_at: now,
    expires_at,
    revoked_at: null,
  });
  return {
    token,
    expires_at,
    user: userView(user),
    device_token: issueDeviceToken(services.encryptionKey, user.id, signedInAt),
  };
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
    await ctx.services.storage.stores.users.revokeToken(ctx.actor.tokenId, ctx.services.clock.nowIso());
    return { ok: true as const };
  },
});

export const logoutEverywhere = defineOperation({
  name: 'auth.logout_all',
  summary: 'Revoke every session token of the signed-in user, this one included (sign out everywhere)',
  input: z.strictObject({}),
  output: z.object({ ok: z.literal(true) }),
  actors: ['user'],
  async run(ctx) {
    if (ctx.actor.kind !== 'user') throw new AppError('forbidden', 'Only user sessions can log out');
    await ctx.services.storage.stores.users.revokeAllTokens(ctx.actor.userId, ctx.services.clock.nowIso());
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

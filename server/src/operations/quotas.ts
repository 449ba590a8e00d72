import type { Config } from '../config/config.js';
import { AppError } from '../domain/errors.js';
import type { Stores } from '../storage/stores/index.js';

/**
 * Per-organization quotas (docs/API.md "Quotas"), checked inside the write transaction of what they
 * limit, so that parallel requests cannot pass one together:
 * - bots: a COUNT of the organization's custom bots under a lock of the organization's `bots` row
 *   (PostgreSQL; on SQLite transactions run one at a time), then the insert in the same transaction;
 * - bytes (uploads, bot data): a counter in the database (`quota_usage`), changed with the row it counts
 *   by one conditional UPDATE that applies only while the result stays within the limit.
 * Over a quota: 403 `quota_exceeded`, whose message names the quota, its limit and its setting; nothing
 * is written.
 */

export type QuotaName = keyof Config['quotas'];
type Quota = QuotaName;

const SETTING: Record<Quota, string> = {
  botsPerOrg: 'WORKROOM_QUOTA_BOTS_PER_ORG',
  botsPerMember: 'WORKROOM_QUOTA_BOTS_PER_MEMBER',
  uploadBytesPerOrg: 'WORKROOM_QUOTA_UPLOAD_BYTES_PER_ORG',
  uploadBytesPerUser: 'WORKROOM_QUOTA_UPLOAD_BYTES_PER_USER',
  botDataBytesPerOrg: 'WORKROOM_QUOTA_BOT_DATA_BYTES_PER_ORG',
};

/** 1536 → "1.5 KiB" (and the exact number of bytes alongside, in the messages). */
function sizeText(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let n = bytes;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return u === 0 ? `${bytes} bytes` : `${Number(n.toFixed(2))} ${units[u]}`;
}

export function quotaExceeded(config: Config, quota: QuotaName, what: string): AppError {
  const limit = config.quotas[quota];
  const shown = quota.startsWith('bots') ? String(limit) : `${sizeText(limit)} (${limit} bytes)`;
  return new AppError(
    'quota_exceeded',
    `Quota ${quota} reached: ${what}; the limit is ${shown}, set by ${SETTING[quota]}`,
  );
}

/** Before inserting a custom bot registered by `userId`: both bot quotas, under the organization's lock. */
export async function checkBotQuota(
  stores: Stores,
  config: Config,
  orgId: string,
  userId: string,
): Promise<void> {
  await stores.quotas.lock(orgId, 'bots');
  const n = await stores.quotas.countCustomBots(orgId, userId);
  if (n.member >= config.quotas.botsPerMember) {
    throw quotaExceeded(
      config,
      'botsPerMember',
      `you have registered ${n.member} custom bots in this organization; delete one first`,
    );
  }
  if (n.org >= config.quotas.botsPerOrg) {
    throw quotaExceeded(config, 'botsPerOrg', `the organization has ${n.org} custom bots; delete one first`);
  }
}

/** Refuses early (before any byte is read) when the uploader or the organization is at its quota. */
export async function uploadRoom(
  stores: Stores,
  config: Config,
  orgId: string,
  uploader: { type: 'user' | 'bot'; id: string },
): Promise<{ bytes: number; quota: Quota }> {
  const orgUsed = await stores.quotas.used(orgId, 'upload_bytes');
  const room = { bytes: config.quotas.uploadBytesPerOrg - orgUsed, quota: 'uploadBytesPerOrg' as Quota };
  if (room.bytes <= 0) throw uploadOverOrg(config, orgUsed);
  if (uploader.type === 'user') {
    const userUsed = await stores.quotas.used(orgId, 'upload_bytes', `user:${uploader.id}`);
    const userRoom = config.quotas.uploadBytesPerUser - userUsed;
    if (userRoom <= 0) throw uploadOverUser(config, userUsed);
    if (userRoom < room.bytes) return { bytes: userRoom, quota: 'uploadBytesPerUser' };
  }
  return room;
}

const uploadOverOrg = (config: Config, used: number, size?: number) =>
  quotaExceeded(
    config,
    'uploadBytesPerOrg',
    `the organization's files take ${sizeText(used)}` +
      (size === undefined ? '' : `, this one ${sizeText(size)} more`),
  );
const uploadOverUser = (config: Config, used: number, size?: number) =>
  quotaExceeded(
    config,
    'uploadBytesPerUser',
    `your files take ${sizeText(used)}` + (size === undefined ? '' : `, this one ${sizeText(size)} more`),
  );

/** Counts an uploaded file's bytes (in its insert's transaction), or refuses it. */
export async function chargeUpload(
  stores: Stores,
  config: Config,
  orgId: string,
  uploader: { type: 'user' | 'bot'; id: string },
  size: number,
): Promise<void> {
  // The user's row first: on PostgreSQL every upload locks the rows in the same order.
  if (uploader.type === 'user') {
    const subject = `user:${uploader.id}`;
    if (!(await stores.quotas.add(orgId, 'upload_bytes', subject, size, config.quotas.uploadBytesPerUser))) {
      throw uploadOverUser(config, await stores.quotas.used(orgId, 'upload_bytes', subject), size);
    }
  }
  if (!(await stores.quotas.add(orgId, 'upload_bytes', '', size, config.quotas.uploadBytesPerOrg))) {
    throw uploadOverOrg(config, await stores.quotas.used(orgId, 'upload_bytes'), size);
  }
}

/**
 * Changes the organization's bot-data bytes by `delta` (a new or larger value: more; a smaller or deleted
 * one: less), in the transaction of the write; refuses a growth past the quota.
 */
export async function chargeBotData(
  stores: Stores,
  config: Config,
  orgId: string,
  delta: number,
): Promise<void> {
  if (await stores.quotas.add(orgId, 'bot_data_bytes', '', delta, config.quotas.botDataBytesPerOrg)) return;
  const used = await stores.quotas.used(orgId, 'bot_data_bytes');
  throw quotaExceeded(
    config,
    'botDataBytesPerOrg',
    `the bot data of this organization's bots takes ${sizeText(used)}, this write would add ${sizeText(delta)}; delete some first`,
  );
}

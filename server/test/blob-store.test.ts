import { randomBytes } from 'node:crypto';
import { existsSync, unlinkSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../src/cli/index.js';
import { TestClock } from '../src/runtime/clock.js';
import { CHUNK_BYTES } from '../src/storage/blobs-database.js';
import { moveFilesToDatabase } from '../src/storage/blobs-move.js';
import { BlobRowStore } from '../src/storage/stores/blobs.js';
import { expectStatus } from './helpers/client.js';
import { startTestServer, type TestServer, sameDatabaseAs } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

/**
 * File bytes in the database (issue 18, point 2; storage/blobs-database.ts): streamed in 256 KiB
 * chunks and back, the size limit while streaming, nothing left of a failed or aborted upload, the
 * bytes deleted with their file row, unattached ones swept, a file uploaded through one instance
 * downloaded through another (PostgreSQL), and `workroom move-files` from disk to the database.
 */

const LIMIT = 2 * 1_048_576;

async function upload(url: string, token: string, channel: string, name: string, data: Buffer) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)]), name);
  const res = await fetch(`${url}/api/channels/${channel}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

async function download(url: string, token: string, fileId: string) {
  const res = await fetch(`${url}/api/files/${fileId}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const blobRows = (srv: TestServer) =>
  srv.app.services.storage.stores.db.selectFrom('blobs').selectAll().execute();
const chunkCount = async (srv: TestServer) =>
  Number(
    (
      await srv.app.services.storage.stores.db
        .selectFrom('blob_chunks')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('the database blob store', () => {
  let srv: TestServer;
  let w: World;
  let ann: UserHandle;
  let channel: string;
  let reader: BotHandle;
  let writerOnly: BotHandle;
  const clock = new TestClock();

  beforeAll(async () => {
    srv = await startTestServer(
      { WORKROOM_BLOB_STORE: 'database', WORKROOM_MAX_UPLOAD_BYTES: String(LIMIT) },
      { clock },
    );
    w = await World.create(srv.url);
    ann = await w.user({ role: 'member' });
    channel = await w.channel(ann.api);
    reader = await w.bot(w.admin.api, { scopes: ['files:read'] });
    writerOnly = await w.bot(w.admin.api, { scopes: ['files:write'] });
    for (const b of [reader, writerOnly])
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: b.id }), 201);
  });
  afterAll(() => srv?.close());

  it('streams an upload into 256 KiB chunks and back, byte for byte', async () => {
    const data = randomBytes(3 * CHUNK_BYTES + 12_345);
    const f = expectStatus(await upload(srv.url, ann.token, channel, 'data.bin', data), 201);
    expect(f.size).toBe(data.length);
    const row = await srv.app.services.storage.stores.files.get(f.id);
    expect(row?.storage_path).toBe(`db:${f.id}`);
    const blob = (await blobRows(srv)).find((b) => b.key === `db:${f.id}`);
    expect(blob).toMatchObject({ file_id: f.id, complete: 1, sha256: f.sha256 });
    expect(Number(blob!.chunks)).toBe(4);
    // Nothing on disk.
    expect(existsSync(join(srv.app.services.config.dataDir, 'files'))).toBe(false);

    for (const token of [ann.token, reader.key]) {
      const got = await download(srv.url, token, f.id);
      expect(got.status).toBe(200);
      expect(Number(got.headers.get('content-length'))).toBe(data.length);
      expect(got.bytes.equals(data)).toBe(true);
    }
    // An empty file and one of exactly one chunk.
    for (const d of [Buffer.alloc(0), randomBytes(CHUNK_BYTES)]) {
      const e = expectStatus(await upload(srv.url, ann.token, channel, 'e.bin', d), 201);
      expect((await download(srv.url, ann.token, e.id)).bytes.equals(d)).toBe(true);
    }
  });

  it('answers 404 to another organization, 403 without files:read, 404 when the bytes are gone', async () => {
    const f = expectStatus(await upload(srv.url, ann.token, channel, 'x.txt', Buffer.from('hello')), 201);
    const other = await w.org();
    expect((await download(srv.url, other.admin.token, f.id)).status).toBe(404);
    expect((await download(srv.url, writerOnly.key, f.id)).status).toBe(403);
    expect((await download(srv.url, ann.token, randomBytes(16).toString('hex'))).status).toBe(400);
    await srv.app.services.storage.stores.db.deleteFrom('blobs').where('key', '=', `db:${f.id}`).execute();
    const gone = await download(srv.url, ann.token, f.id);
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.bytes.toString()).error.message).toBe('File content not found');
  });

  it('enforces the size limit while streaming: 413, and nothing of the upload is left', async () => {
    const before = { blobs: (await blobRows(srv)).length, chunks: await chunkCount(srv) };
    const big = await upload(srv.url, ann.token, channel, 'big.bin', randomBytes(LIMIT + 1));
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('payload_too_large');
    expect((await blobRows(srv)).length).toBe(before.blobs);
    expect(await chunkCount(srv)).toBe(before.chunks);
    const exact = expectStatus(await upload(srv.url, ann.token, channel, 'ok.bin', randomBytes(LIMIT)), 201);
    expect(exact.size).toBe(LIMIT);
  });

  it('leaves nothing of an upload whose client goes away in the middle', async () => {
    const before = (await blobRows(srv)).length;
    const beforeChunks = await chunkCount(srv);
    const req = request(`${srv.url}/api/channels/${channel}/files`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${ann.token}`,
        'content-type': 'multipart/form-data; boundary=b',
        'content-length': String(LIMIT),
      },
    });
    req.on('error', () => undefined);
    req.write('--b\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n');
    req.write(randomBytes(CHUNK_BYTES * 2 + 100));
    // Chunks of it are stored while the rest is awaited…
    await expect
      .poll(() => chunkCount(srv), { timeout: 10_000, interval: 20 })
      .toBeGreaterThanOrEqual(beforeChunks + 2);
    expect((await blobRows(srv)).some((b) => b.complete === 0)).toBe(true);
    // …then the client is gone: the blob and its chunks are deleted.
    req.destroy();
    await expect
      .poll(async () => (await blobRows(srv)).length, { timeout: 10_000, interval: 20 })
      .toBe(before);
    expect(await chunkCount(srv)).toBe(beforeChunks);
  });

  it('the store itself: a source that fails midway leaves nothing; a blob deleted while read ends in an error', async () => {
    const store = srv.app.services.blobs;
    expect(store.kind).toBe('database');
    const before = { blobs: (await blobRows(srv)).length, chunks: await chunkCount(srv) };
    async function* failing() {
      yield randomBytes(CHUNK_BYTES);
      yield randomBytes(CHUNK_BYTES);
      throw new Error('the source broke');
    }
    await expect(store.write('db:failing', failing(), LIMIT)).rejects.toThrow('the source broke');
    expect((await blobRows(srv)).length).toBe(before.blobs);
    expect(await chunkCount(srv)).toBe(before.chunks);

    const data = randomBytes(CHUNK_BYTES * 6);
    async function* once() {
      yield data;
    }
    const stored = await store.write('db:read-me', once(), LIMIT);
    expect(stored.size).toBe(data.length);
    // Read one chunk, then the blob goes: the stream fails instead of ending short.
    const stream = store.open('db:read-me');
    const first = await new Promise<Buffer>((resolve, reject) => {
      stream.once('data', (d: Buffer) => {
        stream.pause();
        resolve(d);
      });
      stream.once('error', reject);
    });
    expect(first.equals(data.subarray(0, CHUNK_BYTES))).toBe(true);
    await store.remove('db:read-me');
    const failed = new Promise<Error>((resolve) => stream.once('error', resolve));
    stream.resume();
    // What was buffered or fetched ahead (a chunk or two) may still arrive; the rest cannot. The fetch of
    // chunk 1 is sent with chunk 0's, but on another pooled connection than the delete: it can run after
    // the delete committed (seen once in CI on PostgreSQL), so the first chunk lost may be chunk 1.
    const ended = new Promise<string>((resolve) => stream.once('end', () => resolve('ended short')));
    expect(await Promise.race([failed.then((e) => e.message), ended])).toMatch(/lost chunk [1-5]/);
    const missing = store.open('db:never-written');
    await expect(
      new Promise((resolve, reject) => missing.once('open', resolve).once('error', reject)),
    ).rejects.toThrow(/not found/);
  });

  it('deletes the bytes with their file row, and sweeps bytes no file row ever took', async () => {
    const db = srv.app.services.storage.stores.db;
    const f = expectStatus(
      await upload(srv.url, ann.token, channel, 'p.bin', randomBytes(CHUNK_BYTES + 1)),
      201,
    );
    const chunksBefore = await chunkCount(srv);
    await db.deleteFrom('files').where('id', '=', f.id).execute();
    expect((await blobRows(srv)).some((b) => b.key === `db:${f.id}`)).toBe(false);
    expect(await chunkCount(srv)).toBe(chunksBefore - 2);

    // What a crash in the middle of an upload leaves: a blob no file row names.
    const rows = new BlobRowStore(db);
    await rows.create('db:crashed', clock.nowIso());
    await rows.putChunk('db:crashed', 0, randomBytes(100));
    clock.advance(23 * 3600_000);
    await rows.create('db:recent', clock.nowIso());
    clock.advance(2 * 3600_000); // the hourly sweep; 'crashed' is now 25 h old, 'recent' 2 h
    await expect
      .poll(async () => (await blobRows(srv)).map((b) => b.key), { timeout: 10_000, interval: 20 })
      .not.toContain('db:crashed');
    expect((await blobRows(srv)).some((b) => b.key === 'db:recent')).toBe(true);
    await rows.delete('db:recent');
  });
});

/**
 * Two instances on one PostgreSQL schema (the deployment behind a load balancer): a file uploaded
 * through either downloads through the other. SQLite is one process's file.
 */
describe.skipIf(!process.env.DATABASE_URL)('files across two instances on one database', () => {
  let a: TestServer;
  let b: TestServer;
  const key = randomBytes(32).toString('base64');

  beforeAll(async () => {
    a = await startTestServer({ WORKROOM_ENCRYPTION_KEY: key });
    b = await startTestServer({ WORKROOM_ENCRYPTION_KEY: key, ...sameDatabaseAs(a) });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('the database store is the default on PostgreSQL; A uploads, B serves, and back', async () => {
    expect(a.app.services.blobs.kind).toBe('database');
    const w = await World.create(a.url);
    const channel = await w.channel(w.admin.api);
    const one = randomBytes(CHUNK_BYTES * 2 + 7);
    const two = randomBytes(1000);
    const f1 = expectStatus(await upload(a.url, w.admin.token, channel, 'one.bin', one), 201);
    const f2 = expectStatus(await upload(b.url, w.admin.token, channel, 'two.bin', two), 201);
    const at = (s: TestServer, id: string) => download(s.url, w.admin.token, id);
    expect((await at(b, f1.id)).bytes.equals(one)).toBe(true);
    expect((await at(a, f2.id)).bytes.equals(two)).toBe(true);
    expect((await at(a, f1.id)).bytes.equals(one)).toBe(true);
  });
});

describe('moving files from disk to the database (workroom move-files)', () => {
  let srv: TestServer;
  let w: World;
  let channel: string;

  beforeAll(async () => {
    srv = await startTestServer({ WORKROOM_BLOB_STORE: 'disk' });
    w = await World.create(srv.url);
    channel = await w.channel(w.admin.api);
  });
  afterAll(() => srv?.close());

  const onDisk = (id: string) =>
    srv.app.services.storage.stores.files
      .get(id)
      .then((r) => join(srv.app.services.config.dataDir, 'files', r!.storage_path));

  it('moves every file, resumes after an interrupted run, and the server serves them throughout', async () => {
    const datas = [randomBytes(CHUNK_BYTES * 2 + 5), randomBytes(10), randomBytes(CHUNK_BYTES)];
    const files = [];
    for (const [i, d] of datas.entries())
      files.push(expectStatus(await upload(srv.url, w.admin.token, channel, `f${i}.bin`, d), 201));
    const paths = await Promise.all(files.map((f) => onDisk(f.id)));
    for (const p of paths) expect(existsSync(p)).toBe(true);
    // What an interrupted run leaves: half a copy of the first file.
    const rows = new BlobRowStore(srv.app.services.storage.stores.db);
    await rows.create(`db:${files[0].id}`, new Date().toISOString());
    await rows.putChunk(`db:${files[0].id}`, 0, randomBytes(CHUNK_BYTES));

    const progress: number[] = [];
    const report = await moveFilesToDatabase(
      srv.app.services.storage,
      srv.app.services.config.dataDir,
      new TestClock(),
      { batch: 2, progress: (r) => progress.push(r.moved) },
    );
    expect(report).toMatchObject({ moved: 3, missing: 0, mismatched: 0, total: 3 });
    expect(report.bytes).toBe(datas.reduce((n, d) => n + d.length, 0));
    expect(progress).toEqual([2, 3]); // after each page of 2
    for (const [i, f] of files.entries()) {
      expect((await srv.app.services.storage.stores.files.get(f.id))?.storage_path).toBe(`db:${f.id}`);
      expect(existsSync(paths[i]!)).toBe(false);
      // Served from the database by the running server (its new uploads still go to disk).
      expect((await download(srv.url, w.admin.token, f.id)).bytes.equals(datas[i]!)).toBe(true);
    }
    const blobs = await blobRows(srv);
    expect(blobs.filter((b) => b.file_id === null)).toEqual([]);
    // Run again: nothing left to do.
    const again = await moveFilesToDatabase(
      srv.app.services.storage,
      srv.app.services.config.dataDir,
      new TestClock(),
    );
    expect(again).toMatchObject({ moved: 0, total: 0 });
  });

  it('the command: progress printed, files not on this disk counted and left as they are (exit 1)', async () => {
    const data = randomBytes(5000);
    const here = expectStatus(await upload(srv.url, w.admin.token, channel, 'here.bin', data), 201);
    const lost = expectStatus(await upload(srv.url, w.admin.token, channel, 'lost.bin', data), 201);
    const herePath = await onDisk(here.id);
    const lostPath = await onDisk(lost.id);
    unlinkSync(lostPath); // as if on another instance's disk
    const config = srv.app.services.config;
    const env: Record<string, string> = { WORKROOM_DATA_DIR: config.dataDir, WORKROOM_BLOB_STORE: 'disk' };
    if (config.database.kind === 'postgres') {
      env.DATABASE_URL = config.database.url;
      env.WORKROOM_DATABASE_SCHEMA = config.database.schema!;
    }
    const printed: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => (printed.push(String(s)), true));
    let code = -1;
    try {
      // On SQLite with the server stopped meanwhile: a second connection's busy wait in this one process
      // would block the server's event loop, and the group commit it waits for.
      if (srv.dialect === 'postgres') code = await runCli(['move-files', '--keep'], env);
      else
        await srv.restart(async () => {
          code = await runCli(['move-files', '--keep'], env);
        });
    } finally {
      spy.mockRestore();
    }
    expect(code).toBe(1);
    const text = printed.join('');
    expect(text).toMatch(/moved 1 of 2 files \(0\.0 MB\), 1 not found on this disk/);
    expect(text).toMatch(/^done: moved 1 of 2 files/m);
    expect(text).toMatch(/set WORKROOM_BLOB_STORE=database/);
    expect((await srv.app.services.storage.stores.files.get(here.id))?.storage_path).toBe(`db:${here.id}`);
    expect(existsSync(lostPath)).toBe(false);
    expect((await srv.app.services.storage.stores.files.get(lost.id))?.storage_path).not.toMatch(/^db:/);
    // --keep: the moved file's disk copy stays.
    expect(existsSync(herePath)).toBe(true);
    expect((await download(srv.url, w.admin.token, here.id)).bytes.equals(data)).toBe(true);
    expect(await runCli(['move-files', '--batch', 'x'], env)).toBe(64);
  });
});

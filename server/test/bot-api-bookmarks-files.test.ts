import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, type ApiResponse } from './helpers/client.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { World, type BotHandle, type UserHandle } from './helpers/world.js';

const MAX_UPLOAD = 64 * 1024;

/** Every file under a directory, recursively. */
function filesUnder(dir: string): string[] {
  let out: string[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = join(dir, e);
    out = statSync(p).isDirectory() ? out.concat(filesUnder(p)) : out.concat([p]);
  }
  return out;
}

describe('bot API: bookmarks and files', () => {
  let srv: TestServer;
  let w: World;
  let orgAdmin: UserHandle;
  let ann: UserHandle;
  let ben: UserHandle;
  let outsider: UserHandle; // same organization, not a channel member
  let bot: BotHandle;
  let channel: string;
  let other: { id: string; admin: UserHandle };
  let otherBot: BotHandle;

  beforeAll(async () => {
    // Files on disk, which these tests look at (the database store: blob-store.test.ts).
    srv = await startTestServer({
      WORKROOM_MAX_UPLOAD_BYTES: String(MAX_UPLOAD),
      WORKROOM_BLOB_STORE: 'disk',
    });
    w = await World.create(srv.url);
    const org = await w.org();
    orgAdmin = org.admin;
    ann = await w.user({ organization_id: org.id });
    ben = await w.user({ organization_id: org.id });
    outsider = await w.user({ organization_id: org.id });
    bot = await w.bot(orgAdmin.api);
    channel = await w.channel(ann.api);
    expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { user_id: ben.id }), 201);
    expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: bot.id }), 201);
    other = await w.org();
    otherBot = await w.bot(other.admin.api);
  });
  afterAll(() => srv.close());

  describe('bookmarks', () => {
    const bm = (ch = channel) => `/api/channels/${ch}/bookmarks`;
    let m1: any;
    let m2: any;
    beforeAll(async () => {
      m1 = expectStatus(await ann.api.post(`/api/channels/${channel}/messages`, { content: 'first' }), 201);
      m2 = expectStatus(await ben.api.post(`/api/channels/${channel}/messages`, { content: 'second' }), 201);
    });

    it('members bookmark, list (with message), filter by user, sort, and delete', async () => {
      const b1 = expectStatus(await ann.api.post(bm(), { message_id: m1.id }), 201);
      expect(b1).toMatchObject({ user_id: ann.id, channel_id: channel, message_id: m1.id });
      await new Promise((r) => setTimeout(r, 5));
      expectStatus(await ann.api.post(bm(), { message_id: m2.id }), 201);
      await new Promise((r) => setTimeout(r, 5));
      expectStatus(await ben.api.post(bm(), { message_id: m1.id }), 201);

      const all = expectStatus(await ann.api.get(bm()), 200);
      expect(all.items).toHaveLength(3);
      expect(all.items[0].user_id).toBe(ben.id); // newest first by default
      expect(all.items[2].message).toMatchObject({ content: 'first', sender_id: ann.id });
      const asc = expectStatus(await ann.api.get(bm(), { query: { sort: 'asc' } }), 200);
      expect(asc.items.map((b: any) => b.id)).toEqual([...all.items].reverse().map((b: any) => b.id));
      const annOnly = expectStatus(await ben.api.get(bm(), { query: { user_id: ann.id } }), 200);
      expect(annOnly.items.map((b: any) => b.message_id)).toEqual([m2.id, m1.id]);
      expect(expectStatus(await ann.api.get(bm(), { query: { limit: 1 } }), 200).items).toHaveLength(1);

      // Duplicate: 409.
      const dup = await ann.api.post(bm(), { message_id: m1.id });
      expect(dup.status).toBe(409);

      // Date range: inclusive bounds; a date-only `to` covers the whole day.
      const today = new Date().toISOString().slice(0, 10);
      expect(
        expectStatus(await ann.api.get(bm(), { query: { from: today, to: today } }), 200).items,
      ).toHaveLength(3);
      expect(expectStatus(await ann.api.get(bm(), { query: { to: '2000-01-01' } }), 200).items).toHaveLength(
        0,
      );
      expect(
        expectStatus(
          await ann.api.get(bm(), { query: { from: b1.created_at, to: b1.created_at, user_id: ann.id } }),
          200,
        ).items.map((b: any) => b.id),
      ).toEqual([b1.id]);
      const future = new Date(Date.now() + 86_400_000).toISOString();
      expect(expectStatus(await ann.api.get(bm(), { query: { from: future } }), 200).items).toHaveLength(0);

      // Delete own bookmark; deleting again 404; ben's remains.
      expectStatus(await ann.api.delete(`${bm()}/${m1.id}`), 200);
      expect((await ann.api.delete(`${bm()}/${m1.id}`)).status).toBe(404);
      const left = expectStatus(await ann.api.get(bm()), 200);
      expect(left.items.map((b: any) => [b.user_id, b.message_id])).toEqual([
        [ben.id, m1.id],
        [ann.id, m2.id],
      ]);
      // A deleted message's bookmarks disappear from the list.
      expectStatus(await ben.api.delete(`/api/messages/${m2.id}`), 200);
      expect(expectStatus(await ann.api.get(bm()), 200).items.map((b: any) => b.message_id)).toEqual([m1.id]);
    });

    it('rejects bad input', async () => {
      const post: [unknown, string][] = [
        [{}, 'message_id'],
        [{ message_id: 5 }, 'message_id'],
        [{ message_id: 'abc' }, 'message_id'],
        [{ message_id: m1.id, extra: 1 }, 'extra'],
      ];
      for (const [body, field] of post) {
        const res = await ann.api.post(bm(), body);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      const get: [Record<string, string | number>, string][] = [
        [{ limit: 0 }, 'limit'],
        [{ limit: 101 }, 'limit'],
        [{ limit: 'many' }, 'limit'],
        [{ sort: 'newest' }, 'sort'],
        [{ from: 'yesterday' }, 'from'],
        [{ to: '2026-13-01' }, 'to'],
        [{ from: '2026-02-01', to: '2026-01-01' }, 'to'],
        [{ user_id: 'me' }, 'user_id'],
        [{ page: 2 }, 'page'],
      ];
      for (const [query, field] of get) {
        const res = await ann.api.get(bm(), { query });
        expect(res.status, JSON.stringify(query)).toBe(400);
        expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
      }
      expect(
        expectStatus(await ann.api.get(bm(), { query: { limit: 100 } }), 200).items.length,
      ).toBeLessThanOrEqual(100);
      expect((await ann.api.delete(`${bm()}/nope`)).status).toBe(400);
    });

    it('the message must be in that channel; members only; other organizations 404; bots 403', async () => {
      const elsewhere = await w.channel(ann.api);
      const m = expectStatus(
        await ann.api.post(`/api/channels/${elsewhere}/messages`, { content: 'x' }),
        201,
      );
      expect((await ann.api.post(bm(), { message_id: m.id })).status).toBe(404);
      expect((await ann.api.post(bm(), { message_id: '00000000-0000-4000-8000-000000000000' })).status).toBe(
        404,
      );
      // Public channel, same organization, not a member: 403.
      for (const res of [
        await outsider.api.post(bm(), { message_id: m1.id }),
        await outsider.api.get(bm()),
        await outsider.api.delete(`${bm()}/${m1.id}`),
      ]) {
        expect(res.status).toBe(403);
      }
      // Private channel of which one is not a member, and other organizations: 404.
      const priv = await w.channel(ann.api, { is_private: true });
      expect((await ben.api.get(bm(priv))).status).toBe(404);
      for (const res of [
        await other.admin.api.post(bm(), { message_id: m1.id }),
        await other.admin.api.get(bm()),
        await other.admin.api.delete(`${bm()}/${m1.id}`),
      ]) {
        expect(res.status).toBe(404);
      }
      // Bookmarks belong to users: bot keys are refused.
      const res = await bot.api.get(bm());
      expect(res.status).toBe(403);
      expect((await w.anon.get(bm())).status).toBe(401);
    });
  });

  describe('files', () => {
    const PNG = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.from('\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0', 'latin1'),
    ]);
    const PDF = Buffer.from('%PDF-1.7\n1 0 obj\n<<>>\nendobj\ntrailer\n%%EOF\n');
    const ZIP = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(40, 1)]);
    const MP3 = Buffer.concat([Buffer.from('ID3'), Buffer.from([3, 0, 0, 0, 0, 0, 0]), Buffer.alloc(64, 7)]);
    const HTML = Buffer.from(
      '<!doctype html><html><body><script>alert(document.cookie)</script></body></html>',
    );

    const upload = async (
      token: string,
      name: string,
      data: Buffer,
      type = 'application/octet-stream',
      ch = channel,
    ): Promise<ApiResponse> => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(data)], { type }), name);
      const res = await fetch(`${srv.url}/api/channels/${ch}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: form,
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
    };
    const list = (
      u: { api: any },
      query: Record<string, string | number> = {},
      ch = channel,
    ): Promise<ApiResponse> => u.api.get(`/api/channels/${ch}/files`, { query });

    it('uploads stream to the data directory; the type comes from the bytes, not the client', async () => {
      const png = expectStatus(await upload(ann.token, 'pixel.png', PNG, 'text/html'), 201);
      expect(png).toMatchObject({
        filename: 'pixel.png',
        content_type: 'image/png',
        kind: 'image',
        size: PNG.length,
        channel_id: channel,
        uploader_type: 'user',
        uploader_id: ann.id,
      });
      expect(png.sha256).toMatch(/^[0-9a-f]{64}$/);
      const stored = filesUnder(join(srv.app.services.config.dataDir, 'files'));
      expect(stored.some((p) => p.endsWith(png.id))).toBe(true);

      const pdf = expectStatus(await upload(ann.token, 'report.pdf', PDF, 'image/png'), 201);
      expect(pdf).toMatchObject({ content_type: 'application/pdf', kind: 'document' });
      const zip = expectStatus(await upload(ben.token, 'bundle.zip', ZIP), 201);
      expect(zip).toMatchObject({ content_type: 'application/zip', kind: 'archive' });
      const mp3 = expectStatus(await upload(bot.key, 'song.mp3', MP3), 201);
      expect(mp3).toMatchObject({
        content_type: 'audio/mpeg',
        kind: 'media',
        uploader_type: 'bot',
        uploader_id: bot.id,
      });
      const html = expectStatus(await upload(ann.token, 'page.html', HTML, 'text/html'), 201);
      expect(html).toMatchObject({ content_type: 'text/plain; charset=utf-8', kind: 'document' });
      const bin = expectStatus(
        await upload(ann.token, '../../etc/passwd', Buffer.from([0, 1, 2, 3, 0xff, 0])),
        201,
      );
      expect(bin).toMatchObject({
        filename: 'passwd',
        content_type: 'application/octet-stream',
        kind: 'other',
      });
    });

    it('downloads as an attachment, never inline, with nosniff', async () => {
      const html = expectStatus(await upload(ann.token, 'évil page.html', HTML, 'text/html'), 201);
      for (const who of [ann, ben, outsider /* public channel: readable by the organization */]) {
        const res = await fetch(`${srv.url}/api/files/${html.id}`, {
          headers: { authorization: `Bearer ${who.token}` },
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
        expect(res.headers.get('content-disposition')).toMatch(
          /^attachment; filename="_vil page.html"; filename\*=UTF-8''%C3%A9vil%20page.html$/,
        );
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        expect(res.headers.get('content-security-policy')).toContain('sandbox');
        expect(Buffer.from(await res.arrayBuffer()).equals(HTML)).toBe(true);
      }
      const png = expectStatus(await upload(ann.token, 'p.png', PNG), 201);
      const res = await fetch(`${srv.url}/api/files/${png.id}`, {
        headers: { authorization: `Bearer ${bot.key}` },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(res.headers.get('content-disposition')).toMatch(/^attachment;/);
      expect(Number(res.headers.get('content-length'))).toBe(PNG.length);
      await res.arrayBuffer();
    });

    it('enforces the upload limit with 413 and removes the partial file', async () => {
      const before = filesUnder(join(srv.app.services.config.dataDir, 'files')).length;
      const big = await upload(ann.token, 'big.bin', Buffer.alloc(MAX_UPLOAD + 1, 0x41));
      expect(big.status).toBe(413);
      expect(big.body.error.code).toBe('payload_too_large');
      expect(filesUnder(join(srv.app.services.config.dataDir, 'files')).length).toBe(before);
      const much = await upload(ann.token, 'huge.bin', Buffer.alloc(MAX_UPLOAD * 4, 0x41));
      expect(much.status).toBe(413);
      expect(filesUnder(join(srv.app.services.config.dataDir, 'files')).length).toBe(before);
      // Far over the limit (beyond the drain cap): 413 at once and the connection is closed, or the
      // client sees the connection close while still sending. Nothing is stored either way.
      const giant = await upload(ann.token, 'giant.bin', Buffer.alloc(9 * 1_048_576, 0x41)).catch(
        (e: Error) => e,
      );
      if (!(giant instanceof Error)) expect(giant.status).toBe(413);
      // A streamed body without Content-Length is cut off at the cap as well.
      const chunks = (async function* () {
        for (let i = 0; i < 200; i++) yield new Uint8Array(64 * 1024).fill(0x42);
      })();
      const head = '--b\r\nContent-Disposition: form-data; name="file"; filename="s.bin"\r\n\r\n';
      const body = new ReadableStream({
        async start(c) {
          c.enqueue(new TextEncoder().encode(head));
          for await (const ch of chunks) c.enqueue(ch);
          c.close();
        },
      });
      const streamed = await fetch(`${srv.url}/api/channels/${channel}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ann.token}`, 'content-type': 'multipart/form-data; boundary=b' },
        body,
        duplex: 'half',
      } as RequestInit).catch((e: Error) => e);
      if (!(streamed instanceof Error)) expect(streamed.status).toBe(413);
      expect(filesUnder(join(srv.app.services.config.dataDir, 'files')).length).toBe(before);
      expectStatus(await ann.api.get('/api/auth/me'), 200);
      const exact = await upload(ann.token, 'exact.txt', Buffer.alloc(MAX_UPLOAD, 0x41));
      expect(exact.status).toBe(201);
      expect(exact.body.size).toBe(MAX_UPLOAD);
    });

    it('refuses uploads without a file, non-multipart, non-members, other organizations, wrong scope', async () => {
      const form = new FormData();
      form.append('note', 'no file here');
      const noFile = await fetch(`${srv.url}/api/channels/${channel}/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ann.token}` },
        body: form,
      });
      expect(noFile.status).toBe(400);
      expect(((await noFile.json()) as any).error.field).toBe('file');
      const json = await ann.api.post(`/api/channels/${channel}/files`, { file: 'x' });
      expect(json.status).toBe(415);
      const broken = await ann.api.request('POST', `/api/channels/${channel}/files`, {
        raw: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc',
        headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
      });
      expect(broken.status).toBe(400);
      expect((await upload(outsider.token, 'a.txt', Buffer.from('hi'))).status).toBe(403);
      expect((await upload(other.admin.token, 'a.txt', Buffer.from('hi'))).status).toBe(404);
      expect((await upload(otherBot.key, 'a.txt', Buffer.from('hi'))).status).toBe(404);
      const priv = await w.channel(ann.api, { is_private: true });
      expect((await upload(ben.token, 'a.txt', Buffer.from('hi'), 'text/plain', priv)).status).toBe(404);
      expect((await upload(ann.token, 'a.txt', Buffer.from('hi'), 'text/plain', 'not-a-uuid')).status).toBe(
        400,
      );
      const reader = await w.bot(orgAdmin.api, { scopes: ['files:read'] });
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: reader.id }), 201);
      const noScope = await upload(reader.key, 'a.txt', Buffer.from('hi'));
      expect(noScope.status).toBe(403);
      expect(noScope.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'files:write' });
      expect((await upload('wrbk_00000000_live_' + '0'.repeat(48), 'a.txt', Buffer.from('hi'))).status).toBe(
        401,
      );
    });

    it('downloads: files:read scope, invisible files 404, revoked key 401', async () => {
      const f = expectStatus(await upload(ann.token, 'd.txt', Buffer.from('data')), 201);
      const writer = await w.bot(orgAdmin.api, { scopes: ['files:write'] });
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: writer.id }), 201);
      const noScope = await writer.api.get(`/api/files/${f.id}`);
      expect(noScope.status).toBe(403);
      expect(noScope.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'files:read' });
      expect((await other.admin.api.get(`/api/files/${f.id}`)).status).toBe(404);
      expect((await otherBot.api.get(`/api/files/${f.id}`)).status).toBe(404);
      const notMemberBot = await w.bot(orgAdmin.api);
      expect((await notMemberBot.api.get(`/api/files/${f.id}`)).status).toBe(404);
      expect((await ann.api.get('/api/files/00000000-0000-4000-8000-000000000000')).status).toBe(404);
      expect((await ann.api.get('/api/files/zzz')).status).toBe(400);
      const b = await w.bot(orgAdmin.api);
      expectStatus(await ann.api.post(`/api/channels/${channel}/members`, { bot_id: b.id }), 201);
      expect((await b.api.get(`/api/files/${f.id}`)).status).toBe(200);
      expectStatus(await orgAdmin.api.delete(`/api/bots/${b.id}/api-keys/${b.keyId}`), 200);
      expect((await b.api.get(`/api/files/${f.id}`)).status).toBe(401);
      expect((await b.api.get(`/api/channels/${channel}/files`)).status).toBe(401);
    });

    describe('GET /api/channels/{channelId}/files', () => {
      let ch: string;
      beforeAll(async () => {
        ch = await w.channel(ann.api);
        const files: [string, Buffer][] = [
          ['Alpha.png', Buffer.concat([PNG, Buffer.alloc(100)])],
          ['beta.pdf', Buffer.concat([PDF, Buffer.alloc(10)])],
          ['gamma.zip', Buffer.concat([ZIP, Buffer.alloc(300)])],
          ['delta.mp3', MP3],
          ['notes_100%.txt', Buffer.from('some notes')],
        ];
        for (const [name, data] of files) {
          expectStatus(await upload(ann.token, name, data, 'application/octet-stream', ch), 201);
          await new Promise((r) => setTimeout(r, 3));
        }
      });
      const names = (res: ApiResponse) => expectStatus(res, 200).items.map((f: any) => f.filename);

      it('defaults: newest first, limit 20, offset 0', async () => {
        const res = expectStatus(await list(ann, {}, ch), 200);
        expect(res).toMatchObject({ limit: 20, offset: 0, has_more: false });
        expect(res.items.map((f: any) => f.filename)).toEqual([
          'notes_100%.txt',
          'delta.mp3',
          'gamma.zip',
          'beta.pdf',
          'Alpha.png',
        ]);
        expect(res.items[0].download_url).toBe(`/api/files/${res.items[0].id}`);
      });

      it('q, type, sort, order, limit, offset', async () => {
        expect(names(await list(ann, { q: 'ALPHA' }, ch))).toEqual(['Alpha.png']);
        expect(names(await list(ann, { q: '100%' }, ch))).toEqual(['notes_100%.txt']);
        expect(names(await list(ann, { q: '_' }, ch))).toEqual(['notes_100%.txt']);
        expect(names(await list(ann, { type: 'image' }, ch))).toEqual(['Alpha.png']);
        expect(names(await list(ann, { type: 'document' }, ch))).toEqual(['notes_100%.txt', 'beta.pdf']);
        expect(names(await list(ann, { type: 'media' }, ch))).toEqual(['delta.mp3']);
        expect(names(await list(ann, { type: 'archive' }, ch))).toEqual(['gamma.zip']);
        expect(names(await list(ann, { sort: 'filename', order: 'asc' }, ch))).toEqual([
          'Alpha.png',
          'beta.pdf',
          'delta.mp3',
          'gamma.zip',
          'notes_100%.txt',
        ]);
        expect(names(await list(ann, { sort: 'size' }, ch))[0]).toBe('gamma.zip');
        expect(names(await list(ann, { sort: 'size', order: 'asc' }, ch))[0]).toBe('notes_100%.txt');
        expect(names(await list(ann, { sort: 'created_at', order: 'asc' }, ch))[0]).toBe('Alpha.png');
        const page = expectStatus(
          await list(ann, { sort: 'filename', order: 'asc', limit: 2, offset: 2 }, ch),
          200,
        );
        expect(page.items.map((f: any) => f.filename)).toEqual(['delta.mp3', 'gamma.zip']);
        expect(page.has_more).toBe(true);
        expect(names(await list(ann, { offset: 5 }, ch))).toEqual([]);
        // Bots that are members read with files:read; outsiders of the org may read public channels.
        const reader = await w.bot(orgAdmin.api, { scopes: ['files:read'] });
        expectStatus(await ann.api.post(`/api/channels/${ch}/members`, { bot_id: reader.id }), 201);
        expect(names(await list(reader, {}, ch))).toHaveLength(5);
        expect(names(await list(outsider, {}, ch))).toHaveLength(5);
      });

      it('validates every query parameter', async () => {
        const cases: [Record<string, string | number>, string][] = [
          [{ q: 'x'.repeat(201) }, 'q'],
          [{ type: 'video' }, 'type'],
          [{ type: 'other' }, 'type'],
          [{ sort: 'name' }, 'sort'],
          [{ order: 'up' }, 'order'],
          [{ limit: 0 }, 'limit'],
          [{ limit: 101 }, 'limit'],
          [{ limit: 2.5 }, 'limit'],
          [{ offset: -1 }, 'offset'],
          [{ offset: 'x' }, 'offset'],
          [{ page: 1 }, 'page'],
        ];
        for (const [query, field] of cases) {
          const res = await list(ann, query, ch);
          expect(res.status, JSON.stringify(query)).toBe(400);
          expect(res.body.error).toMatchObject({ code: 'invalid_input', field });
        }
        expect((await list(ann, { q: 'x'.repeat(200), limit: 100 }, ch)).status).toBe(200);
      });

      it('scope, visibility and other organizations', async () => {
        const writer = await w.bot(orgAdmin.api, { scopes: ['files:write'] });
        expectStatus(await ann.api.post(`/api/channels/${ch}/members`, { bot_id: writer.id }), 201);
        const res = await list(writer, {}, ch);
        expect(res.status).toBe(403);
        expect(res.body.error).toMatchObject({ code: 'insufficient_scope', scope: 'files:read' });
        expect((await list(other.admin, {}, ch)).status).toBe(404);
        expect((await list(otherBot, {}, ch)).status).toBe(404);
        expect((await list(bot, {}, ch)).status).toBe(404); // not a member of this channel
        expect((await list(ann, {}, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
      });
    });
  });
});

/**
 * Editing a message (PUT /api/messages/{id}) and listing a channel's files
 * (GET /api/channels/{id}/files), against the same-run reference (bare node:http + JSON parse + one
 * better-sqlite3 write). Goal: Workroom ≥ 0.5× the reference.
 */
import { api, load, report, seed, startReference, startWorkroom } from './lib.js';

const MESSAGES = 200;
const FILES = 300;

const body = (i: number) =>
  JSON.stringify({ content: `Edited benchmark message, revision ${i}, with **markdown**.` });

const ref = await startReference('rest');
const refResult = await load({ url: ref.url, method: 'PUT', path: () => '/messages', body });
await ref.stop();

const wr = await startWorkroom();
const s = await seed(wr.url);
const botAuth = { authorization: `Bearer ${s.botKey}` };
const userAuth = { authorization: `Bearer ${s.token}` };

// Messages to edit: the bot's own (rule 7), spread over many rows.
const botMessages: string[] = [];
const userMessages: string[] = [];
for (let i = 0; i < MESSAGES; i++) {
  botMessages.push(
    (await api(wr.url, 'POST', `/api/channels/${s.channelId}/messages`, s.botKey, { content: `b${i}` })).id,
  );
  userMessages.push(
    (await api(wr.url, 'POST', `/api/channels/${s.channelId}/messages`, s.token, { content: `u${i}` })).id,
  );
}
// Files of every kind, uploaded through the API.
const samples: [string, Buffer][] = [
  [
    'photo',
    Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(200)]),
  ],
  ['report', Buffer.from('%PDF-1.7\n' + 'x'.repeat(500))],
  ['bundle', Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(300)])],
  ['notes', Buffer.from('plain text notes '.repeat(20))],
];
for (let i = 0; i < FILES; i++) {
  const [name, data] = samples[i % samples.length]!;
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)]), `${name}-${i}.bin`);
  const res = await fetch(`${wr.url}/api/channels/${s.channelId}/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.token}` },
    body: form,
  });
  if (res.status !== 201) throw new Error(`upload → ${res.status}: ${await res.text()}`);
}

const editBot = await load({
  url: wr.url,
  method: 'PUT',
  path: (i) => `/api/messages/${botMessages[i % MESSAGES]}`,
  headers: botAuth,
  body,
});
const editUser = await load({
  url: wr.url,
  method: 'PUT',
  path: (i) => `/api/messages/${userMessages[i % MESSAGES]}`,
  headers: userAuth,
  body,
});
const listDefault = await load({
  url: wr.url,
  method: 'GET',
  path: () => `/api/channels/${s.channelId}/files`,
  headers: botAuth,
});
const listQuery = await load({
  url: wr.url,
  method: 'GET',
  path: (i) =>
    `/api/channels/${s.channelId}/files?q=${['photo', 'report', 'notes'][i % 3]}&type=${['image', 'document', 'document'][i % 3]}&sort=filename&order=asc&limit=50&offset=${(i % 3) * 10}`,
  headers: userAuth,
});
await wr.stop();

report('Edit a message and list channel files (REST, SQLite)', [
  ['reference: node:http + JSON + 1 write', refResult],
  ['workroom PUT /api/messages/{id} (bot)', editBot],
  ['workroom PUT /api/messages/{id} (user)', editUser],
  ['workroom GET …/files (bot, defaults)', listDefault],
  ['workroom GET …/files (user, q+type+sort+page)', listQuery],
]);

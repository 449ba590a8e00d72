import { useEffect, useRef, useState } from 'preact/hooks';
import { FILE_SORTS, FILE_TYPES } from 'virtual:openapi-lists';
import { api, describe, ok } from '../api/client';
import type { Body } from '../api/types';
import { senderName, type Directory } from './directory';

type FileItem = Body<'/api/channels/{channelId}/files', 'get'>['items'][number];
type FileType = (typeof FILE_TYPES)[number];
type FileSort = (typeof FILE_SORTS)[number];

const TYPE_LABEL: Record<FileType, string> = {
  image: 'Images',
  document: 'Documents',
  media: 'Audio and video',
  archive: 'Archives',
};
/** Each sort key, in both directions: [label descending, label ascending]. */
const SORT_LABEL: Record<FileSort, [string, string]> = {
  created_at: ['Newest first', 'Oldest first'],
  filename: ['Name, Z to A', 'Name, A to Z'],
  size: ['Largest first', 'Smallest first'],
};
const PAGE = 50;
const when = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function formatSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * A channel's files (GET /api/channels/{id}/files): upload (multipart, the server sniffs the type),
 * search by name, filter by type, sort, and older pages. A download is fetched with the session's
 * token and handed to the browser as a file (the API always answers it as an attachment).
 */
export function Files(props: { channelId: string; dir: Directory | null }) {
  const { channelId, dir } = props;
  const [items, setItems] = useState<FileItem[] | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [q, setQ] = useState('');
  const [query, setQuery] = useState('');
  const [type, setType] = useState<FileType | ''>('');
  const [order, setOrder] = useState<`${FileSort}:${'asc' | 'desc'}`>('created_at:desc');
  const [uploading, setUploading] = useState(false);
  const [status, setStatus] = useState('');
  const fileInput = useRef<HTMLInputElement>(null);

  // The name search waits for a pause in typing.
  useEffect(() => {
    const t = setTimeout(() => setQuery(q.trim()), 250);
    return () => clearTimeout(t);
  }, [q]);

  const load = async (offset: number) => {
    const [sort, dir] = order.split(':') as [FileSort, 'asc' | 'desc'];
    const params: {
      sort: FileSort;
      order: 'asc' | 'desc';
      limit: number;
      offset: number;
      q?: string;
      type?: FileType;
    } = { sort, order: dir, limit: PAGE, offset };
    if (query) params.q = query;
    if (type) params.type = type;
    try {
      const r = await ok(
        api.GET('/api/channels/{channelId}/files', { params: { path: { channelId }, query: params } }),
      );
      setItems((now) => (offset === 0 ? r.items : [...(now ?? []), ...r.items]));
      setHasMore(r.has_more);
      setError(null);
    } catch (e) {
      setItems((now) => now ?? []);
      setError(describe(e));
    }
  };
  useEffect(() => void load(0), [channelId, query, type, order]);

  async function upload(e: Event) {
    e.preventDefault();
    const file = fileInput.current?.files?.[0];
    if (!file) {
      setError('Choose a file to upload first.');
      return;
    }
    const form = new FormData();
    form.append('file', file, file.name);
    setUploading(true);
    setError(null);
    try {
      const f = await ok(
        api.POST('/api/channels/{channelId}/files', {
          params: { path: { channelId } },
          body: form as never,
          bodySerializer: (b: unknown) => b as FormData,
        }),
      );
      setStatus(`${f.filename} uploaded.`);
      if (fileInput.current) fileInput.current.value = '';
      await load(0);
    } catch (err) {
      setError(describe(err));
    } finally {
      setUploading(false);
    }
  }

  async function download(f: FileItem) {
    try {
      const r = await api.GET('/api/files/{fileId}', {
        params: { path: { fileId: f.id } },
        parseAs: 'blob',
      });
      if (!r.response.ok || !(r.data instanceof Blob))
        throw new Error(`The download failed (${r.response.status}).`);
      const url = URL.createObjectURL(r.data);
      const a = document.createElement('a');
      a.href = url;
      a.download = f.filename;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      setStatus(`${f.filename} downloaded.`);
    } catch (e) {
      setError(describe(e));
    }
  }

  return (
    <section class="panel-body" aria-labelledby="files-title">
      <h2 id="files-title" class="sr-only">
        Files
      </h2>
      <p class="sr-only" role="status">
        {status}
      </p>
      <form class="filters upload" aria-label="Upload a file" onSubmit={(e) => void upload(e)}>
        <label>
          File
          <input ref={fileInput} type="file" name="file" />
        </label>
        <button type="submit" class="primary" disabled={uploading}>
          {uploading ? 'Uploading…' : 'Upload'}
        </button>
      </form>
      <form class="filters" role="search" aria-label="Find files" onSubmit={(e) => e.preventDefault()}>
        <label>
          Name contains
          <input type="search" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        </label>
        <label>
          Type
          <select value={type} onChange={(e) => setType(e.currentTarget.value as FileType | '')}>
            <option value="">All types</option>
            {FILE_TYPES.map((t) => (
              <option key={t} value={t}>
                {TYPE_LABEL[t]}
              </option>
            ))}
          </select>
        </label>
        <label>
          Sort
          <select value={order} onChange={(e) => setOrder(e.currentTarget.value as typeof order)}>
            {FILE_SORTS.flatMap((s) => [
              <option key={`${s}:desc`} value={`${s}:desc`}>
                {SORT_LABEL[s][0]}
              </option>,
              <option key={`${s}:asc`} value={`${s}:asc`}>
                {SORT_LABEL[s][1]}
              </option>,
            ])}
          </select>
        </label>
      </form>
      {error !== null && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {items === null ? (
        <p class="muted">Loading…</p>
      ) : items.length === 0 ? (
        <p class="empty">{query || type ? 'No file matches.' : 'No files yet.'}</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Files of the channel</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Size</th>
                <th scope="col" class="wide">
                  Uploaded by
                </th>
                <th scope="col">Date</th>
              </tr>
            </thead>
            <tbody>
              {items.map((f) => (
                <tr key={f.id}>
                  <th scope="row">
                    <button
                      type="button"
                      class="link file-name"
                      title={`Download ${f.filename} (${f.content_type})`}
                      onClick={() => void download(f)}
                    >
                      {f.filename}
                    </button>
                  </th>
                  <td>{f.kind}</td>
                  <td>{formatSize(f.size)}</td>
                  <td class="wide">
                    {senderName(dir, { sender_type: f.uploader_type, sender_id: f.uploader_id })}
                  </td>
                  <td>
                    <time dateTime={f.created_at}>{when.format(new Date(f.created_at))}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {hasMore && (
        <button type="button" onClick={() => void load(items?.length ?? 0)}>
          More files
        </button>
      )}
    </section>
  );
}

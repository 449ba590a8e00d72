/**
 * Content type from the bytes themselves (magic numbers), never from the client. Anything that is not
 * recognized is application/octet-stream, and text is always text/plain, so a file is never taken for
 * HTML or SVG by a browser.
 */

export const FILE_KINDS = ['image', 'document', 'media', 'archive', 'other'] as const;
export type FileKind = (typeof FILE_KINDS)[number];

export interface Sniffed {
  contentType: string;
  kind: FileKind;
}

const startsWith = (b: Buffer, sig: number[], offset = 0): boolean =>
  b.length >= offset + sig.length && sig.every((v, i) => b[offset + i] === v);
const ascii = (b: Buffer, text: string, offset = 0): boolean =>
  b.length >= offset + text.length && b.toString('latin1', offset, offset + text.length) === text;

const OOXML: Record<string, string> = {
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

function sniffZip(head: Buffer, filename: string): Sniffed {
  // OpenDocument: the first entry is an uncompressed "mimetype" file naming the type.
  if (ascii(head, 'mimetype', 30)) {
    const m = /^application\/vnd\.oasis\.opendocument\.[a-z.-]+/.exec(head.toString('latin1', 38, 120));
    if (m) return { contentType: m[0], kind: 'document' };
  }
  // Office Open XML: a ZIP with [Content_Types].xml and a word/, xl/ or ppt/ part.
  const ext = /\.([a-z]+)$/i.exec(filename)?.[1]?.toLowerCase();
  const text = head.toString('latin1');
  if (ext && OOXML[ext] && (text.includes('[Content_Types].xml') || /(word|xl|ppt)\//.test(text))) {
    return { contentType: OOXML[ext]!, kind: 'document' };
  }
  return { contentType: 'application/zip', kind: 'archive' };
}

/** Valid UTF-8 without NUL and with few control characters counts as text. */
function looksLikeText(head: Buffer): boolean {
  if (head.length === 0) return false;
  let control = 0;
  for (const byte of head) {
    if (byte === 0) return false;
    if (byte < 9 || (byte > 13 && byte < 32) || byte === 127) control++;
  }
  if (control > head.length / 100) return false;
  // Cut at most 3 bytes of a possibly split multi-byte character at the end before decoding.
  for (let cut = 0; cut <= 3; cut++) {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, head.length - cut));
      return true;
    } catch {
      // try a shorter prefix
    }
  }
  return false;
}

export function sniffContentType(head: Buffer, filename: string): Sniffed {
  const img = (t: string): Sniffed => ({ contentType: t, kind: 'image' });
  const media = (t: string): Sniffed => ({ contentType: t, kind: 'media' });
  const doc = (t: string): Sniffed => ({ contentType: t, kind: 'document' });
  const arc = (t: string): Sniffed => ({ contentType: t, kind: 'archive' });

  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return img('image/png');
  if (startsWith(head, [0xff, 0xd8, 0xff])) return img('image/jpeg');
  if (ascii(head, 'GIF87a') || ascii(head, 'GIF89a')) return img('image/gif');
  if (ascii(head, 'RIFF') && ascii(head, 'WEBP', 8)) return img('image/webp');
  if (ascii(head, 'BM') && head.length > 14 && head.readUInt32LE(2) > 14) return img('image/bmp');
  if (startsWith(head, [0x00, 0x00, 0x01, 0x00]) && head.length > 6) return img('image/x-icon');
  if (startsWith(head, [0x49, 0x49, 0x2a, 0x00]) || startsWith(head, [0x4d, 0x4d, 0x00, 0x2a]))
    return img('image/tiff');
  if (ascii(head, 'ftyp', 4)) {
    const brand = head.toString('latin1', 8, 12);
    if (['avif', 'avis'].includes(brand)) return img('image/avif');
    if (['heic', 'heix', 'mif1', 'msf1'].includes(brand)) return img('image/heic');
    if (brand.startsWith('M4A')) return media('audio/mp4');
    if (brand === 'qt  ') return media('video/quicktime');
    return media('video/mp4');
  }

  if (ascii(head, '%PDF-')) return doc('application/pdf');
  if (startsWith(head, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]))
    return doc('application/x-ole-storage');
  if (ascii(head, '{\\rtf')) return doc('application/rtf');

  if (ascii(head, 'ID3') || startsWith(head, [0xff, 0xfb]) || startsWith(head, [0xff, 0xf3]))
    return media('audio/mpeg');
  if (ascii(head, 'RIFF') && ascii(head, 'WAVE', 8)) return media('audio/wav');
  if (ascii(head, 'RIFF') && ascii(head, 'AVI ', 8)) return media('video/x-msvideo');
  if (ascii(head, 'OggS')) return media('audio/ogg');
  if (ascii(head, 'fLaC')) return media('audio/flac');
  if (startsWith(head, [0x1a, 0x45, 0xdf, 0xa3])) return media('video/webm');

  if (startsWith(head, [0x50, 0x4b, 0x03, 0x04]) || startsWith(head, [0x50, 0x4b, 0x05, 0x06]))
    return sniffZip(head, filename);
  if (startsWith(head, [0x1f, 0x8b])) return arc('application/gzip');
  if (startsWith(head, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])) return arc('application/x-7z-compressed');
  if (ascii(head, 'Rar!\x1a\x07')) return arc('application/vnd.rar');
  if (ascii(head, 'BZh')) return arc('application/x-bzip2');
  if (startsWith(head, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])) return arc('application/x-xz');
  if (ascii(head, 'ustar', 257)) return arc('application/x-tar');

  // Text of any kind (including HTML, SVG and scripts) is stored and served as plain text.
  if (looksLikeText(head)) return doc('text/plain; charset=utf-8');
  return { contentType: 'application/octet-stream', kind: 'other' };
}

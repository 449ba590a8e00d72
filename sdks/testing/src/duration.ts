const UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** Milliseconds of `1500`, `'90s'`, `'2h'`, `'1h30m'`, `'3d'` (units ms, s, m, h, d, w). */
export function toMs(d: number | string): number {
  if (typeof d === 'number') {
    if (!Number.isFinite(d) || d < 0) throw new RangeError(`not a duration: ${d}`);
    return d;
  }
  const parts = [...d.trim().matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== d.replace(/\s+/g, ''))
    throw new RangeError(`not a duration: "${d}" (e.g. 1500, "90s", "2h", "1h30m", "3d")`);
  return parts.reduce((sum, p) => sum + Number(p[1]) * UNITS[p[2]!]!, 0);
}

/** Epoch milliseconds of a Date, an ISO 8601 string or a number. */
export function toEpoch(at: Date | string | number): number {
  const t = at instanceof Date ? at.getTime() : typeof at === 'string' ? Date.parse(at) : at;
  if (!Number.isFinite(t)) throw new RangeError(`not a time: ${String(at)}`);
  return t;
}

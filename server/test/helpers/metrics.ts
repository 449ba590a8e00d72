/** Reading a Prometheus text exposition in tests (metrics*.test.ts). */

/** Parsed text exposition: series (`name{a="x",b="y"}`, labels sorted) → value; and the TYPE lines. */
export function parseExposition(text: string): { series: Map<string, number>; types: Map<string, string> } {
  const series = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels = [...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
      .map((l) => `${l[1]}="${l[2]}"`)
      .sort();
    series.set(`${m[1]}{${labels.join(',')}}`, Number(m[4]));
  }
  return { series, types };
}

/** Sum of the series of `name` whose labels include all of `labels`. */
export function valueOf(
  s: { series: Map<string, number> },
  name: string,
  labels: Record<string, string> = {},
): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const [key, v] of s.series) {
    const brace = key.indexOf('{');
    if (key.slice(0, brace) !== name) continue;
    const have = key.slice(brace + 1, -1).split(',');
    if (want.every((w) => have.includes(w))) sum += v;
  }
  return sum;
}

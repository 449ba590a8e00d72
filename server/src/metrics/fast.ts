import type { Registry } from 'prom-client';

/**
 * A histogram and a counter for the hot paths (every HTTP request, every MCP call), registered in a
 * prom-client Registry like its own metrics. prom-client's observe() validates and hashes the label
 * object on every call, even through a child from labels(). Measured side by side (the same process,
 * 500,000 observations, a 2-core machine at load average 20): prom-client 9.7–15.8 µs a call, this
 * 1.8–4.1 µs; against a POST that costs ~270 µs of CPU (3,700 req/s) that is the difference between
 * 3–6 % and about 1 %. Here a child is found by one Map lookup of a string key and updated in place;
 * the label objects are built at scrape time.
 *
 * What get() returns is the shape prom-client's Registry formats (name, help, type, values with
 * labels and metricName), so the exposition is the same as prom-client's own.
 */

interface Value {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

interface MetricData {
  name: string;
  help: string;
  type: 'histogram' | 'counter';
  values: Value[];
  aggregator: 'sum';
}

abstract class FastMetric<C> {
  protected readonly children = new Map<string, { labels: Record<string, string>; data: C }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The child of these label values (in labelNames' order), made on first use. */
  protected child(values: readonly string[]): C {
    const key = values.join('\u0001');
    let c = this.children.get(key);
    if (c === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i] ?? ''));
      c = { labels, data: this.fresh() };
      this.children.set(key, c);
    }
    return c.data;
  }

  protected abstract fresh(): C;

  reset(): void {
    this.children.clear();
  }
}

interface HistogramData {
  /** Observations per bucket (not cumulative); the last one is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

export class FastHistogram extends FastMetric<HistogramData> {
  readonly type = 'histogram';

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
    registry: Registry,
  ) {
    super(name, help, labelNames, registry);
  }

  protected fresh(): HistogramData {
    return { counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
  }

  /** Counts `value` for the label values given in labelNames' order. */
  observe(values: readonly string[], value: number): void {
    const h = this.child(values);
    const b = this.buckets;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    h.counts[i]!++;
    h.sum += value;
    h.count++;
  }

  get(): MetricData {
    const values: Value[] = [];
    for (const { labels, data } of this.children.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += data.counts[i]!;
        values.push({ labels: { ...labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({
        labels: { ...labels, le: '+Inf' },
        value: data.count,
        metricName: `${this.name}_bucket`,
      });
      values.push({ labels, value: data.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: data.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' };
  }
}

export class FastCounter extends FastMetric<{ value: number }> {
  readonly type = 'counter';

  protected fresh(): { value: number } {
    return { value: 0 };
  }

  inc(values: readonly string[], by = 1): void {
    this.child(values).value += by;
  }

  get(): MetricData {
    const values: Value[] = [];
    for (const { labels, data } of this.children.values()) values.push({ labels, value: data.value });
    return { name: this.name, help: this.help, type: 'counter', values, aggregator: 'sum' };
  }
}

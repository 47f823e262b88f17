/**
 * A strict reader of the Prometheus text exposition format 0.0.4, for tests: every line must be a
 * well-formed HELP, TYPE or sample line, every sample must belong to a declared family, and label
 * values must be properly escaped. Returns the samples so tests can read values.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const HELP = new RegExp(`^# HELP (${NAME}) (.*)$`);
const TYPE = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)/;

export function parsePrometheusText(text: string): Sample[] {
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const lines = text.split('\n');
  lines.pop();
  for (const [i, line] of lines.entries()) {
    const where = `line ${i + 1}: ${line}`;
    if (line === '') continue;
    if (line.startsWith('#')) {
      const t = TYPE.exec(line);
      if (t) {
        if (types.has(t[1])) throw new Error(`${where}: family declared twice`);
        types.set(t[1], t[2]);
        continue;
      }
      if (HELP.test(line)) continue;
      throw new Error(`${where}: malformed comment line`);
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`${where}: malformed sample`);
    const [, name, rawLabels, rawValue] = m;
    const family = [...types.keys()].find((f) => name === f || (['histogram', 'summary'].includes(types.get(f)!) && /^(_bucket|_sum|_count)$/.test(name.slice(f.length)) && name.startsWith(f)));
    if (!family) throw new Error(`${where}: sample of an undeclared family`);
    const labels: Record<string, string> = {};
    let rest = rawLabels ?? '';
    while (rest.length) {
      const l = LABEL.exec(rest);
      if (!l) throw new Error(`${where}: malformed labels`);
      labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      rest = rest.slice(l[0].length);
    }
    // Prometheus reads values with Go's ParseFloat: NaN and Inf in any letter case.
    if (!/^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?inf|nan)$/i.test(rawValue)) throw new Error(`${where}: malformed value`);
    const special = rawValue.toLowerCase();
    const value = special === 'nan' ? NaN : special.endsWith('inf') ? (special.startsWith('-') ? -Infinity : Infinity) : Number(rawValue);
    samples.push({ name, labels, value });
  }
  return samples;
}

/** The value of one series (0 when absent). */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s ? s.value : 0;
}

import { Writable } from 'node:stream';

/** A Writable that keeps what a CLI command writes, for its tests to read back with `text()`. */
export function sink(): Writable & { text: () => string } {
  const chunks: string[] = [];
  const w = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  }) as Writable & { text: () => string };
  w.text = () => chunks.join('');
  return w;
}

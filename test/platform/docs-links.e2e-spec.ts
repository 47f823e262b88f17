import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * The README and the pages under docs/ link to each other and into the tree: every relative link
 * must name a file that exists and, with `#anchor`, a heading of that page (GitHub's anchors).
 */
const root = path.join(__dirname, '../..');

function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replace(/ /g, '-');
}

/** The headings of a Markdown file outside fenced code, as anchors. */
function anchors(file: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(slug(m[1]));
  }
  return out;
}

function links(file: string): Array<{ target: string; anchor?: string }> {
  const text = fs.readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const out: Array<{ target: string; anchor?: string }> = [];
  for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const href = m[1];
    if (/^[a-z]+:/i.test(href)) continue;
    const [target, anchor] = href.split('#');
    out.push({ target, anchor });
  }
  return out;
}

/** The (1-based) lines where table rows go on after a blank line: Markdown renders them as a second table without a header. */
function splitTables(text: string): number[] {
  const lines = text.split('\n');
  const out: number[] = [];
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].startsWith('```')) fenced = !fenced;
    const row = (l: string | undefined) => l !== undefined && l.startsWith('|');
    const separator = (l: string | undefined) => l !== undefined && /^\|\s*:?-{3,}/.test(l);
    if (!fenced && i >= 2 && row(lines[i]) && lines[i - 1].trim() === '' && row(lines[i - 2]) && !separator(lines[i + 1])) out.push(i + 1);
  }
  return out;
}

const pages = ['README.md', 'examples/README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('documentation links', () => {
  it('the README links every page under docs/', () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const unlinked = pages.filter((p) => p.startsWith('docs/') && !readme.includes(`](${p})`));
    expect(unlinked).toEqual([]);
  });

  it.each(pages)('every relative link of %s resolves to a file and a heading', (page) => {
    const file = path.join(root, page);
    const broken: string[] = [];
    for (const { target, anchor } of links(file)) {
      const dest = target ? path.resolve(path.dirname(file), target) : file;
      if (!fs.existsSync(dest)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor && dest.endsWith('.md') && !anchors(dest).has(anchor)) broken.push(`${target}#${anchor}: no such heading`);
    }
    expect(broken).toEqual([]);
  });

  it.each(pages)('no table of %s is split by a blank line', (page) => {
    expect(splitTables(fs.readFileSync(path.join(root, page), 'utf8'))).toEqual([]);
  });

  it('the table check can fail: rows after a blank line are found, a second table is not', () => {
    const text = '| a | b |\n| --- | --- |\n| 1 | 2 |\n\n| 3 | 4 |\n\n| c | d |\n| --- | --- |\n| 5 | 6 |\n';
    expect(splitTables(text)).toEqual([5]);
  });

  it('the check can fail: a missing heading and a missing file are found', () => {
    const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'docs-links-'));
    const f = path.join(dir, 'a.md');
    fs.writeFileSync(f, '# Title\n\n[ok](#title) [bad](#nope) [gone](missing.md)\n');
    const found = links(f).filter(({ target, anchor }) => (target ? !fs.existsSync(path.join(dir, target)) : !anchors(f).has(anchor!)));
    expect(found.map((l) => l.target || `#${l.anchor}`)).toEqual(['#nope', 'missing.md']);
  });
});

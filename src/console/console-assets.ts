import * as fs from 'node:fs';
import * as path from 'node:path';
import { PROJECT_ROOT } from '../platform/project-root';

/** Where the console's build (bin/build-console.js) writes its files. */
export const CONSOLE_DIST = path.join(PROJECT_ROOT, 'console', 'dist');

export function consoleBuilt(dir = CONSOLE_DIST): boolean {
  return fs.existsSync(path.join(dir, 'index.html'));
}

/**
 * Same-origin only: the console talks to the host it was served by and loads nothing else (no CDN,
 * no inline script), so an injected string in an artifact or tool description cannot run as code.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>OpenWOP console: not built</title></head>
<body><main><h1>The operator console is not built</h1>
<p>Build it with <code>npm run console:build</code> (it needs the development dependencies, which
<code>npm ci</code> installs), then reload this page. The API itself is unaffected.</p></main></body></html>`;

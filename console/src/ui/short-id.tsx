import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { idSegments } from './id-breaks';

/** The first 8 characters of a long id (a UUID's first group), for tables and headings. */
export function shortId(id: string): string {
  return id.length > 12 ? id.slice(0, 8) : id;
}

async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    /* fall back below */
  }
  // Plain-HTTP hosts have no async clipboard: a selected off-screen field and the copy command.
  const field = document.createElement('textarea');
  field.value = text;
  field.setAttribute('readonly', '');
  field.className = 'offscreen';
  document.body.appendChild(field);
  field.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  field.remove();
  return ok;
}

/** A button that copies a full id, saying so (politely announced) for two seconds. */
export function CopyButton({ value, what }: { value: string; what: string }) {
  const [copied, setCopied] = useState<boolean | null>(null);
  useEffect(() => {
    if (copied === null) return;
    const t = setTimeout(() => setCopied(null), 2000);
    return () => clearTimeout(t);
  }, [copied]);
  return (
    <>
      <button type="button" class="copy" onClick={() => void copyText(value).then(setCopied)} aria-label={`Copy ${what} ${value}`} title={`Copy the full ${what}`}>
        Copy
      </button>
      <span class="copy-status" role="status">
        {copied === true ? 'Copied' : copied === false ? 'Copy failed: select the id by hand' : ''}
      </span>
    </>
  );
}

/**
 * A long id shown short (its full value in the tooltip and in the accessible name), optionally as a link,
 * with a copy button for the full id.
 */
export function ShortId({ id, what, href }: { id: string; what: string; href?: string }) {
  const text = <code>{shortId(id)}</code>;
  return (
    <span class="short-id">
      {href ? (
        <a href={href} title={id} aria-label={`${what[0].toUpperCase()}${what.slice(1)} ${id}`}>
          {text}
        </a>
      ) : (
        <span title={id}>{text}</span>
      )}
      <CopyButton value={id} what={what} />
    </span>
  );
}

/**
 * A whole id in code type that wraps only after its separators (`workflow:` `private.` `examples.` `greet`), never
 * inside a name: in a table its column is as narrow as its longest piece, not one character (code.ident).
 */
export function BreakableId({ id }: { id: string }) {
  return (
    <code class="ident">
      {idSegments(id).map((piece, i) => (
        <Fragment key={i}>
          {i ? <wbr /> : null}
          {piece}
        </Fragment>
      ))}
    </code>
  );
}

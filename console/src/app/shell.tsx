import { useEffect, useRef } from 'preact/hooks';
import type { Identity } from '../session';
import { PAGES } from './pages';
import { useRoute } from '../navigation';

/** The signed-in console: the navigation of the pages the credential may see, and the page the address names. */
export function Shell({ identity, onSignOut }: { identity: Identity; onSignOut: () => void }) {
  const route = useRoute();
  const pages = PAGES.filter((p) => p.visible(identity));
  const page = pages.find((p) => p.id === route.page) ?? pages[0];
  // An item address of another page (or of a page this credential may not see) does not apply to the page shown.
  const pageRoute = page && page.id === route.page ? route : { page: page?.id ?? '' };
  const mainRef = useRef<HTMLElement>(null);
  const first = useRef(true);
  useEffect(() => {
    document.title = page ? `${page.title} · OpenWOP console` : 'OpenWOP console';
    // Moving between pages puts keyboard focus at the start of the new page.
    if (!first.current) mainRef.current?.focus();
    first.current = false;
  }, [page?.id]);
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), mainRef.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <span class="brand">OpenWOP console</span>
        <nav aria-label="Pages">
          <ul>
            {pages.map((p) => (
              <li key={p.id}>
                <a href={`#/${p.id}`} aria-current={p === page ? 'page' : undefined}>
                  {p.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span title="Tenant, workspace and principal of the signed-in credential">
            <span class="sr-only">Signed in as </span>
            {identity.principal} · {identity.tenant}
            {identity.workspace ? ` / ${identity.workspace}` : ''}
          </span>
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" ref={mainRef} tabIndex={-1}>
        {page ? (
          <>
            <h1>{page.title}</h1>
            {page.render(identity, pageRoute)}
          </>
        ) : (
          <>
            <h1>Nothing to show</h1>
            <p>This credential holds none of the scopes the console's pages need.</p>
          </>
        )}
      </main>
    </>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { href, parseHash, Route } from './routes';

/** The route of the address bar, following its changes (links, back and forward). */
export function useRoute(): Route {
  const [route, setRoute] = useState(parseHash(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** Goes to a page (and item) of the console, as a link would. */
export function navigate(page: string, id?: string): void {
  window.location.hash = href(page, id);
}

import type { ApiError } from '../api/client';
import { stableJson } from '../diff';

/** A server error, shown with its canonical `error` code and `message` (and details when present). */
export function ErrorBanner({ error }: { error: ApiError | null | undefined }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <strong>
        <code class="error-code">{error.error}</code>
        {error.status ? <span class="muted"> (HTTP {error.status})</span> : null}
      </strong>
      <p class="error-message">{error.message}</p>
      {error.details !== undefined ? (
        <details>
          <summary>Details</summary>
          <pre>{stableJson(error.details)}</pre>
        </details>
      ) : null}
    </div>
  );
}

// The states every page shows the same way: loading, empty, error, and
// forbidden (the key's account type cannot use this page).
import type { ComponentChildren, VNode } from "preact";
import { ApiError, session } from "../api";
import type { Loaded } from "../hooks";

export function Loading({ what }: { what: string }) {
  return (
    <p class="state loading" role="status" aria-live="polite" data-state="loading">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return (
    <p class="state empty" data-state="empty">
      {children}
    </p>
  );
}

export function Forbidden({ error }: { error: ApiError }) {
  const type = session.accountType();
  return (
    <div class="state forbidden" role="alert" data-state="forbidden">
      <h2>Not available to this account</h2>
      <p>{error.message}</p>
      <p>
        {type ? `You are signed in with a ${type} key. ` : ""}Sign in with a key of the other account type to use this page.
      </p>
    </div>
  );
}

export function Failure({ error, what, retry }: { error: unknown; what: string; retry?: () => void }) {
  if (error instanceof ApiError && error.forbidden) return <Forbidden error={error} />;
  const message = error instanceof Error ? error.message : String(error);
  const notFound = error instanceof ApiError && error.status === 404;
  return (
    <div class="state error" role="alert" data-state={notFound ? "not-found" : "error"}>
      <h2>{notFound ? `No such ${what}` : `Could not load ${what}`}</h2>
      <p>{message}</p>
      {retry && !notFound && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

// Show renders a Loaded value: its loading and error states, or children
// with the data.
export function Show<T>({ value, what, children }: { value: Loaded<T>; what: string; children: (data: T) => VNode | null }) {
  switch (value.state) {
    case "loading":
      return <Loading what={what} />;
    case "error":
      return <Failure error={value.error} what={what} retry={value.reload} />;
    case "ok":
      return children(value.data);
  }
}

// ErrorNote is the inline error of an action (a button's request).
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const fields = error instanceof ApiError ? error.fieldViolations() : [];
  return (
    <div class="note error" role="alert">
      <p>{message}</p>
      {fields.length > 0 && (
        <ul>
          {fields.map((f) => (
            <li key={f.field}>
              <code>{f.field}</code>: {f.description}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

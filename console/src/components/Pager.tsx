// Paging through nextPageToken: the pages seen are a stack of tokens (the
// first page's is ""), so Previous goes back without the server knowing
// any page but the next.
import { useState } from "preact/hooks";

export interface Pages {
  token: string;
  number: number;
  reset: () => void;
  prev: () => void;
  next: (token: string) => void;
}

export function usePages(): Pages {
  const [tokens, setTokens] = useState<string[]>([""]);
  return {
    token: tokens[tokens.length - 1] ?? "",
    number: tokens.length,
    reset: () => setTokens([""]),
    prev: () => setTokens((t) => (t.length > 1 ? t.slice(0, -1) : t)),
    next: (token) => setTokens((t) => [...t, token]),
  };
}

export function Pager({ what, pages, nextPageToken, note }: { what: string; pages: Pages; nextPageToken: string | undefined; note?: string }) {
  return (
    <nav class="pager" aria-label={`Pages of ${what}`}>
      <button type="button" disabled={pages.number <= 1} onClick={pages.prev}>
        Previous page
      </button>
      <span>
        Page {pages.number}
        {note ? ` (${note})` : ""}
      </span>
      <button type="button" disabled={!nextPageToken} onClick={() => nextPageToken && pages.next(nextPageToken)}>
        Next page
      </button>
    </nav>
  );
}

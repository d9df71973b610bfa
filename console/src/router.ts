// Hash routing: the server serves one page at /console/, and every view is
// a fragment (#/jobs/ID), so a reload or a shared link lands on the same
// view without the server knowing the console's routes.
import { useEffect, useState } from "preact/hooks";

export interface Route {
  // The path split on "/", decoded: #/jobs/abc -> ["jobs", "abc"].
  parts: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, "");
  const [path = "", qs = ""] = raw.split("?", 2);
  const parts = path
    .split("/")
    .filter((p) => p !== "")
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
  return { parts, query: new URLSearchParams(qs) };
}

// href builds a fragment link from path parts (each encoded) and a query.
export function href(parts: string[], query?: Record<string, string | undefined>): string {
  const path = parts.map((p) => encodeURIComponent(p)).join("/");
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v !== undefined && v !== "") q.set(k, v);
  }
  const qs = q.toString();
  return `#/${path}${qs ? `?${qs}` : ""}`;
}

export function navigate(to: string): void {
  if (location.hash !== to) location.hash = to;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

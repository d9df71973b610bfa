import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export type Loaded<T> =
  | { state: "loading"; reload: () => void }
  | { state: "error"; error: unknown; reload: () => void }
  | { state: "ok"; data: T; reload: () => void; refreshing: boolean };

// useLoad runs load when deps change and on reload(); an answer that
// arrives after a newer request started is dropped, so a slow response
// cannot overwrite the view of a later one. A reload keeps the data on
// screen (refreshing) instead of flashing the loading state.
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [result, setResult] = useState<
    { state: "loading" } | { state: "error"; error: unknown } | { state: "ok"; data: T; refreshing: boolean }
  >({ state: "loading" });
  const seq = useRef(0);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const depsKey = useRef<unknown[]>([]);

  useEffect(() => {
    const n = ++seq.current;
    const sameDeps = deps.length === depsKey.current.length && deps.every((d, i) => Object.is(d, depsKey.current[i]));
    depsKey.current = deps;
    setResult((r) => (sameDeps && r.state === "ok" ? { ...r, refreshing: true } : { state: "loading" }));
    load().then(
      (data) => {
        if (n === seq.current) setResult({ state: "ok", data, refreshing: false });
      },
      (error: unknown) => {
        if (n === seq.current) setResult({ state: "error", error });
      },
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);

  return { ...result, reload } as Loaded<T>;
}

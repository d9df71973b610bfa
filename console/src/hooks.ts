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

export interface Action<A extends unknown[]> {
  // busy is true from the call until the action settles; pages disable
  // the control that started it so that one click sends one request.
  busy: boolean;
  // error is what the last call threw (shown with ErrorNote), cleared when
  // the next one starts.
  error: unknown;
  run: (...args: A) => Promise<void>;
  // onSubmit is for a form, whose action takes no arguments: it keeps the
  // browser from posting the form (the page handles it) and calls run.
  onSubmit: (e: Event) => void;
}

// useAction is the one place a button or form calls the API: it marks the
// action busy, clears the previous error, and keeps what the action throws
// for the page to show instead of losing it as an unhandled rejection.
// run is made anew at each render, so it calls that render's action and
// sees the state it saw (the text typed, the version chosen).
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<void>): Action<A> {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (...args: A) => {
    setBusy(true);
    setError(null);
    try {
      await action(...args);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const onSubmit = (e: Event) => {
    e.preventDefault();
    void (run as () => Promise<void>)();
  };
  return { busy, error, run, onSubmit };
}

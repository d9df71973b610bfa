// A rule text editor that checks as you type: each pause sends the text to
// POST /v1/rules/check and shows every compile error at its line and
// column, in the gutter and in a list whose entries move the caret there.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, must, type Schemas } from "../api";
import { utf16Offset } from "../format";

type CheckError = Schemas["RuleCheckError"];
type Kind = Schemas["RulesKind"];

export interface CheckState {
  state: "idle" | "checking" | "ok" | "errors" | "failed";
  errors: CheckError[];
  result?: Schemas["CheckRulesResponse"];
  message?: string;
}

const debounceMs = 250;

export function useRuleCheck(text: string, kind: Kind): CheckState {
  const [state, setState] = useState<CheckState>({ state: "idle", errors: [] });
  const seq = useRef(0);
  useEffect(() => {
    const n = ++seq.current;
    if (text.trim() === "") {
      setState({ state: "idle", errors: [] });
      return;
    }
    setState((s) => ({ ...s, state: "checking" }));
    const timer = setTimeout(() => {
      must(api.POST("/v1/rules/check", { body: { text, kind } })).then(
        (r) => {
          if (n !== seq.current) return;
          setState({ state: r.errors.length ? "errors" : "ok", errors: r.errors, result: r });
        },
        (e: unknown) => {
          if (n !== seq.current) return;
          setState({ state: "failed", errors: [], message: e instanceof Error ? e.message : String(e) });
        },
      );
    }, debounceMs);
    return () => clearTimeout(timer);
  }, [text, kind]);
  return state;
}

export function RuleEditor({
  id,
  label,
  value,
  onChange,
  kind,
  extraErrors,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (v: string) => void;
  kind: Kind;
  // Errors the server gave when the text was submitted (CompilationErrors).
  extraErrors?: readonly CheckError[];
}) {
  const check = useRuleCheck(value, kind);
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLDivElement>(null);
  // While a new check runs the last errors stay, so the list does not flicker.
  const live = check.state === "errors" || (check.state === "checking" && check.errors.length > 0);
  const errors = live ? check.errors : check.state === "ok" ? [] : (extraErrors ?? []);
  const errorLines = new Map<number, string>();
  for (const e of errors) if (!errorLines.has(e.line)) errorLines.set(e.line, e.message);
  const lines = value.split("\n");

  const jump = (e: CheckError) => {
    const ta = area.current;
    if (!ta) return;
    let offset = 0;
    for (let i = 0; i < e.line - 1 && i < lines.length; i++) offset += (lines[i] ?? "").length + 1;
    offset += utf16Offset(lines[e.line - 1] ?? "", Math.max(0, e.column - 1));
    ta.focus();
    ta.setSelectionRange(offset, offset);
  };

  return (
    <div class="rule-editor">
      <label for={id}>{label}</label>
      <div class="editor-body">
        <div class="gutter" ref={gutter} aria-hidden="true">
          {lines.map((_, i) => (
            <div key={i} class={errorLines.has(i + 1) ? "ln err" : "ln"} data-line={i + 1} title={errorLines.get(i + 1)}>
              {i + 1}
            </div>
          ))}
        </div>
        <textarea
          id={id}
          ref={area}
          value={value}
          wrap="off"
          spellcheck={false}
          autocomplete="off"
          rows={Math.min(24, Math.max(8, lines.length + 1))}
          aria-invalid={errors.length > 0}
          aria-describedby={`${id}-status`}
          onInput={(e) => onChange(e.currentTarget.value)}
          onScroll={(e) => {
            if (gutter.current) gutter.current.scrollTop = e.currentTarget.scrollTop;
          }}
        />
      </div>
      <div id={`${id}-status`} class="check-status" aria-live="polite" data-check={check.state}>
        {check.state === "idle" && <span>Type rules; they are checked as you type.</span>}
        {check.state === "checking" && <span>Checking…</span>}
        {check.state === "ok" && check.result && (
          <span class="ok">
            Compiles: {check.result.signalCount ?? 0} signals, complexity {check.result.complexityScore?.toFixed(2) ?? "0"}.
          </span>
        )}
        {check.state === "failed" && <span class="error">Could not check: {check.message}</span>}
        {errors.length > 0 && (
          <>
            <span class="error">
              {errors.length} error{errors.length === 1 ? "" : "s"}:
            </span>
            <ul class="check-errors">
              {errors.map((e, i) => (
                <li key={i} data-line={e.line} data-column={e.column}>
                  <button type="button" class="link" onClick={() => jump(e)}>
                    Line {e.line}, column {e.column}
                  </button>
                  : {e.message}
                </li>
              ))}
            </ul>
          </>
        )}
      </div>
    </div>
  );
}

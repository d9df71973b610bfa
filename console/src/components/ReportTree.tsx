// An evaluation report as a tree that folds: the report, its sections
// (labels), each section's rules with their text, outcome, score and the
// spans they flagged, and the exception rules. Sections that fired start
// open.
import type { ComponentChildren } from "preact";
import type { EvaluationReport, FeedbackAnnotation, Schemas } from "../api";
import { formatScore, outcomeName } from "../format";
import { FeedbackButtons } from "./Feedback";
import { SpanExcerpts } from "./Highlight";

type Assertion = Schemas["AssertionReport"];
type Section = Schemas["SectionReport"];

export function OutcomeBadge({ outcome }: { outcome: string | undefined }) {
  const name = outcomeName(outcome) || "UNSPECIFIED";
  return <span class={`badge outcome-${name.toLowerCase()}`}>{name}</span>;
}

function AssertionList({ items, kind }: { items: readonly Assertion[]; kind: string }) {
  if (items.length === 0) return null;
  return (
    <ul class="assertions" aria-label={kind}>
      {items.map((a, i) => (
        <li key={i} class="assertion">
          <div class="assertion-head">
            <OutcomeBadge outcome={a.result} />
            <span class="score" title="score">
              {formatScore(a.score)}
            </span>
            <code class="rule-text">{a.message}</code>
          </div>
          {a.spans && a.spans.length > 0 && <SpanExcerpts spans={a.spans.filter((s) => s.transcriptStartMs === undefined)} />}
          {a.spans && a.spans.some((s) => s.transcriptStartMs !== undefined) && (
            <p class="hint">Matched in transcript chunks: see the hits below.</p>
          )}
        </li>
      ))}
    </ul>
  );
}

function sectionScore(report: EvaluationReport, s: Section): number | undefined {
  if (s.reviewResult) return s.reviewResult.score;
  const m = report.labelMatches[s.name];
  if (m !== undefined) return m;
  let best: number | undefined;
  for (const a of s.assertionEvaluationReports) best = best === undefined ? a.score : Math.max(best, a.score);
  return best;
}

export function actualOf(outcome: string | undefined): "TRUE" | "FALSE" | "" {
  const o = outcomeName(outcome);
  return o === "TRUE" || o === "FALSE" ? o : "";
}

export function ReportTree({
  report,
  feedback,
}: {
  report: EvaluationReport;
  // Feedback buttons per section, when the report belongs to a job result.
  feedback?: { jobUuid: string; jobResultId: string; onSaved: (a: FeedbackAnnotation) => void };
}) {
  return (
    <details class="report" open>
      <summary>
        <span class="report-title">
          Report: <OutcomeBadge outcome={report.result} /> {report.policyKey ? <span class="policy-key">{report.policyKey}</span> : null}
        </span>
        <span class="meta">threshold {report.threshold}</span>
      </summary>
      <ul class="sections">
        {report.sectionEvaluationReports.map((s, i) => (
          <li key={i}>
            <details class="section" open={outcomeName(s.result) === "TRUE"} data-section={s.name}>
              <summary>
                <OutcomeBadge outcome={s.result} /> <span class="section-name">{s.name}</span>{" "}
                <span class="score" title="score">
                  {formatScore(sectionScore(report, s))}
                </span>
                {s.message ? <span class="section-message">{s.message}</span> : null}
              </summary>
              {feedback && (
                <FeedbackButtons
                  target={{ jobUuid: feedback.jobUuid, jobResultId: feedback.jobResultId, label: s.name, actual: actualOf(s.result) }}
                  onSaved={feedback.onSaved}
                />
              )}
              <AssertionList items={s.assertionEvaluationReports} kind={`Rules of ${s.name}`} />
              {s.exceptionEvaluationReport && (
                <Exception title={`Exceptions of ${s.name}`} result={s.exceptionEvaluationReport.result}>
                  <AssertionList items={s.exceptionEvaluationReport.assertionEvaluationReports} kind={`Exceptions of ${s.name}`} />
                </Exception>
              )}
            </details>
          </li>
        ))}
      </ul>
      {report.exceptionEvaluationReport && (
        <Exception title="Policy exceptions" result={report.exceptionEvaluationReport.result}>
          <AssertionList items={report.exceptionEvaluationReport.assertionEvaluationReports} kind="Policy exceptions" />
        </Exception>
      )}
      <p class="meta">
        Tokens: {report.tokenUsage.inputTokens} in, {report.tokenUsage.billedTokens} billed (x{report.tokenUsage.multiplier})
      </p>
    </details>
  );
}

function Exception({ title, result, children }: { title: string; result: string; children: ComponentChildren }) {
  return (
    <details class="exception">
      <summary>
        {title}: <OutcomeBadge outcome={result} />
      </summary>
      {children}
    </details>
  );
}

// reportSpans gathers the spans the report's rules flagged in the item's
// own text (not in transcript chunks, not exceptions), for the item's
// highlighted view.
export function reportSpans(report: EvaluationReport): Schemas["FlaggedSpan"][] {
  const out: Schemas["FlaggedSpan"][] = [];
  const add = (items: readonly Assertion[] | undefined) => {
    for (const a of items ?? []) for (const s of a.spans ?? []) if (s.transcriptStartMs === undefined) out.push(s);
  };
  for (const s of report.sectionEvaluationReports) add(s.assertionEvaluationReports);
  return out;
}

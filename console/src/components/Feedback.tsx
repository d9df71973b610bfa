// Feedback: a reviewer says whether a label's outcome was right, for a
// result (per label) or for one occurrence of a video or audio hit.
import { useState } from "preact/hooks";
import { api, must, type FeedbackAnnotation, type Schemas } from "../api";
import { useAction } from "../hooks";
import { enumName, formatTime, ms, shortId, timecode } from "../format";
import { ErrorNote } from "./States";

type Expected = Schemas["EvaluationResult"];

export interface FeedbackTarget {
  jobUuid: string;
  jobResultId: string;
  label: string;
  // What the job said for the label: TRUE, FALSE, or unknown.
  actual: "TRUE" | "FALSE" | "";
  occurrence?: Schemas["Occurrence"];
}

const opposite = (a: "TRUE" | "FALSE"): "TRUE" | "FALSE" => (a === "TRUE" ? "FALSE" : "TRUE");

export function FeedbackButtons({ target, onSaved, compact }: { target: FeedbackTarget; onSaved: (a: FeedbackAnnotation) => void; compact?: boolean }) {
  const [saved, setSaved] = useState<FeedbackAnnotation | null>(null);
  const [comment, setComment] = useState("");
  const [commenting, setCommenting] = useState(false);

  const send = useAction(async (expected: "TRUE" | "FALSE") => {
    const body: Schemas["CreateFeedbackRequest"] = {
      jobResultId: target.jobResultId,
      label: target.label,
      expectedOutcome: `EVALUATION_RESULT_${expected}` as Expected,
    };
    if (comment.trim() !== "") body.comment = comment;
    if (target.occurrence) body.target = { occurrence: target.occurrence };
    const r = await must(api.POST("/v1/jobs/{jobUuid}/feedback", { params: { path: { jobUuid: target.jobUuid } }, body }));
    setSaved(r.annotation);
    setCommenting(false);
    onSaved(r.annotation);
  });

  const what = target.occurrence ? `${target.label} at ${timecode(ms(target.occurrence.startMs) ?? 0)}` : target.label;
  const buttons =
    target.actual === ""
      ? [
          { text: "Should be TRUE", expected: "TRUE" as const, aria: `${what} should be TRUE` },
          { text: "Should be FALSE", expected: "FALSE" as const, aria: `${what} should be FALSE` },
        ]
      : [
          { text: "Right", expected: target.actual, aria: `${what} was right (${target.actual})` },
          { text: "Wrong", expected: opposite(target.actual), aria: `${what} was wrong (should be ${opposite(target.actual)})` },
        ];
  return (
    <div class={compact ? "feedback compact" : "feedback"}>
      {buttons.map((b) => (
        <button type="button" key={b.text} disabled={send.busy} aria-label={b.aria} onClick={() => send.run(b.expected)}>
          {b.text}
        </button>
      ))}
      <button type="button" class="link" aria-expanded={commenting} onClick={() => setCommenting(!commenting)}>
        {commenting ? "No comment" : "Comment…"}
      </button>
      {commenting && (
        <label class="comment">
          <span class="visually-hidden">Comment on {what}</span>
          <input type="text" maxLength={10000} value={comment} placeholder="Why (optional)" onInput={(e) => setComment(e.currentTarget.value)} />
        </label>
      )}
      {saved && (
        <span class="saved" role="status">
          Saved: expected {enumName(saved.expectedOutcome, "EVALUATION_RESULT_")}
        </span>
      )}
      <ErrorNote error={send.error} />
    </div>
  );
}

function targetText(a: FeedbackAnnotation): string {
  const o = a.target.occurrence;
  if (o) {
    const start = ms(o.startMs);
    const end = ms(o.endMs);
    return `${enumName(o.modality, "MODALITY_")} ${start !== undefined ? timecode(start) : "?"}${end !== undefined ? `–${timecode(end)}` : ""}`;
  }
  return a.target.contentHash ? `content ${shortId(a.target.contentHash.replace(/^sha256::/, ""))}` : "content";
}

export function FeedbackList({ annotations }: { annotations: readonly FeedbackAnnotation[] }) {
  return (
    <div class="table-wrap">
      <table class="feedback-list">
        <caption class="visually-hidden">Feedback on this job</caption>
        <thead>
          <tr>
            <th scope="col">Label</th>
            <th scope="col">Target</th>
            <th scope="col">Expected</th>
            <th scope="col">Actual</th>
            <th scope="col">Comment</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {annotations.map((a) => (
            <tr key={a.id} data-feedback-id={a.id}>
              <td data-label="Label">{a.label}</td>
              <td data-label="Target">{targetText(a)}</td>
              <td data-label="Expected">{enumName(a.expectedOutcome, "EVALUATION_RESULT_")}</td>
              <td data-label="Actual">{enumName(a.actualOutcome, "EVALUATION_RESULT_")}</td>
              <td data-label="Comment">{a.comment}</td>
              <td data-label="Updated">{formatTime(a.updatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// A label's dataset examples: the test content and the outcome the label
// should give it, which dataset runs measure a version against. Examples
// are added by pasting lines (up to 1,000 per request, all or none, as the
// API takes them) and deleted one by one.
import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { api, must, type Schemas } from "../api";
import { OutcomeBadge } from "../components/ReportTree";
import { Pager, usePages } from "../components/Pager";
import { Empty, ErrorNote, Show } from "../components/States";
import { formatTime, shortId } from "../format";
import { useAction, useLoad } from "../hooks";

type Example = Schemas["DatasetExample"];
type Expected = Schemas["EvaluationResult"];

export const maxExamplesPerRequest = 1000;

// parseExampleLines reads "TRUE some text" / "FALSE other text" lines (the
// outcome first, so the text may hold anything, tabs included). Blank
// lines are skipped; any other line is an error naming its number.
export function parseExampleLines(input: string): { examples: { text: string; expected: Expected }[]; errors: string[] } {
  const examples: { text: string; expected: Expected }[] = [];
  const errors: string[] = [];
  input.split("\n").forEach((raw, i) => {
    const line = raw.replace(/\r$/, "");
    if (line.trim() === "") return;
    const m = /^\s*(TRUE|FALSE)\s+(\S[\s\S]*)$/i.exec(line);
    if (!m || !m[1] || !m[2]) {
      errors.push(`line ${i + 1}: start with TRUE or FALSE, then a space and the text`);
      return;
    }
    examples.push({ text: m[2], expected: m[1].toUpperCase() === "TRUE" ? "EVALUATION_RESULT_TRUE" : "EVALUATION_RESULT_FALSE" });
  });
  if (examples.length > maxExamplesPerRequest) errors.push(`${examples.length} examples: at most ${maxExamplesPerRequest} at a time`);
  return { examples, errors };
}

export function expectedBadge(e: Expected): JSX.Element {
  return <OutcomeBadge outcome={e === "EVALUATION_RESULT_TRUE" ? "OUTCOME_TRUE" : e === "EVALUATION_RESULT_FALSE" ? "OUTCOME_FALSE" : undefined} />;
}

// exampleContent is what an example shows of its content: its text, or
// that it is an image (the console shows no image bytes: its CSP allows
// images from the server's origin only, not data URLs).
export function exampleContent(e: Example): string {
  if (e.contentData.text !== undefined) return e.contentData.text;
  return `image ${shortId(e.contentHash)}`;
}

export function Examples({ labelId }: { labelId: string }) {
  const pages = usePages();
  const token = pages.token;
  const [tick, setTick] = useState(0);
  const page = useLoad(
    () =>
      must(
        api.GET("/v1/labels/{labelId}/examples", {
          params: { path: { labelId }, query: { page_size: 100, ...(token ? { page_token: token } : {}) } },
        }),
      ),
    [labelId, token, tick],
  );
  const added = () => {
    pages.reset();
    setTick((t) => t + 1);
  };
  return (
    <section class="examples" aria-label="Dataset examples">
      <AddExamples labelId={labelId} onAdded={added} />
      <Show value={page} what="examples">
        {(p) => (
          <>
            {p.examples.length === 0 ? (
              <Empty>No examples yet: add some above, then run a version on them (Dataset runs).</Empty>
            ) : (
              <div class="table-wrap">
                <table class="examples">
                  <caption class="visually-hidden">Examples, oldest first</caption>
                  <thead>
                    <tr>
                      <th scope="col">Content</th>
                      <th scope="col">Expected</th>
                      <th scope="col">Note</th>
                      <th scope="col">Added</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {p.examples.map((e) => (
                      <tr key={e.exampleId} data-example={e.exampleId}>
                        <td data-label="Content" class="example-text">
                          {exampleContent(e)}
                        </td>
                        <td data-label="Expected">{expectedBadge(e.expectedOutcome)}</td>
                        <td data-label="Note">{e.note}</td>
                        <td data-label="Added">{formatTime(e.created)}</td>
                        <td data-label="Actions">
                          <DeleteExample labelId={labelId} example={e} onDeleted={() => setTick((t) => t + 1)} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <Pager what="examples" pages={pages} nextPageToken={p.nextPageToken} />
          </>
        )}
      </Show>
    </section>
  );
}

function AddExamples({ labelId, onAdded }: { labelId: string; onAdded: () => void }) {
  const [input, setInput] = useState("");
  const [note, setNote] = useState("");
  const [done, setDone] = useState(0);
  const parsed = parseExampleLines(input);

  const add = useAction(async () => {
    if (parsed.errors.length > 0 || parsed.examples.length === 0) return;
    setDone(0);
    const r = await must(
      api.POST("/v1/labels/{labelId}/examples", {
        params: { path: { labelId } },
        body: {
          examples: parsed.examples.map((x) => ({ contentData: { text: x.text }, expectedOutcome: x.expected, ...(note ? { note } : {}) })),
        },
      }),
    );
    setDone(r.examples.length);
    setInput("");
    onAdded();
  });
  return (
    <form class="card add-examples" onSubmit={add.onSubmit} aria-label="Add examples">
      <label>
        Examples, one per line: TRUE or FALSE (the outcome the label should give), a space, then the text
        <textarea rows={5} value={input} onInput={(e) => setInput(e.currentTarget.value)} placeholder={"TRUE i will kill you\nFALSE see you tomorrow"} />
      </label>
      <label>
        Note (kept with each)
        <input type="text" maxLength={10000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
      </label>
      {parsed.errors.length > 0 && (
        <ul class="note error parse-errors" role="alert">
          {parsed.errors.slice(0, 10).map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      )}
      <button type="submit" disabled={add.busy || parsed.errors.length > 0 || parsed.examples.length === 0}>
        Add {parsed.examples.length || ""} example{parsed.examples.length === 1 ? "" : "s"}
      </button>
      {done > 0 && (
        <p class="note ok" role="status" data-added={done}>
          Added {done} example{done === 1 ? "" : "s"}.
        </p>
      )}
      <ErrorNote error={add.error} />
    </form>
  );
}

function DeleteExample({ labelId, example, onDeleted }: { labelId: string; example: Example; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const remove = useAction(async () => {
    await must(api.DELETE("/v1/labels/{labelId}/examples/{exampleId}", { params: { path: { labelId, exampleId: example.exampleId } } }));
    onDeleted();
  });
  if (!confirming) {
    return (
      <button type="button" class="link" onClick={() => setConfirming(true)}>
        Delete
      </button>
    );
  }
  return (
    <span class="confirm">
      <button type="button" disabled={remove.busy} onClick={() => remove.run()}>
        Delete for good
      </button>
      <button type="button" class="link" onClick={() => setConfirming(false)}>
        Keep
      </button>
      <ErrorNote error={remove.error} />
    </span>
  );
}

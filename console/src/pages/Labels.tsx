// Labels of a label-first account: the list (with archived ones on
// request) and a form to create one.
import { useState } from "preact/hooks";
import { api, must, type Schemas } from "../api";
import { Pager, usePages } from "../components/Pager";
import { Empty, ErrorNote, Show } from "../components/States";
import { formatTime } from "../format";
import { useAction, useLoad } from "../hooks";
import { href, navigate } from "../router";

type Label = Schemas["Label"];

export function Labels() {
  const [archived, setArchived] = useState(false);
  const pages = usePages();
  const token = pages.token;
  const labels = useLoad(
    () =>
      must(
        api.GET("/v1/labels", {
          params: { query: { page_size: 50, ...(archived ? { include_archived: true } : {}), ...(token ? { page_token: token } : {}) } },
        }),
      ),
    [archived, token],
  );

  return (
    <section aria-labelledby="labels-title">
      <h1 id="labels-title">Labels</h1>
      <NewLabel />
      <label class="inline">
        <input
          type="checkbox"
          checked={archived}
          onChange={(e) => {
            setArchived(e.currentTarget.checked);
            pages.reset();
          }}
        />{" "}
        Show archived labels
      </label>
      <Show value={labels} what="labels">
        {(page) => (
          <>
            {page.labels.length === 0 ? <Empty>No labels yet. Create one above.</Empty> : <LabelTable labels={page.labels} />}
            <Pager what="labels" pages={pages} nextPageToken={page.nextPageToken} />
          </>
        )}
      </Show>
    </section>
  );
}

function LabelTable({ labels }: { labels: readonly Label[] }) {
  return (
    <div class="table-wrap">
      <table class="labels">
        <caption class="visually-hidden">Labels, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Description</th>
            <th scope="col">Tags</th>
            <th scope="col">State</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {labels.map((l) => (
            <tr key={l.labelId} data-label-id={l.labelId}>
              <td data-label="Name">
                <a href={href(["labels", l.labelId])}>{l.name}</a>
              </td>
              <td data-label="Description">{l.description}</td>
              <td data-label="Tags">
                {l.tags.map((t) => (
                  <span key={t.labelTagId} class="tag">
                    {t.name}
                  </span>
                ))}
              </td>
              <td data-label="State">{l.archivedAt ? "archived" : l.disabled ? "disabled" : "active"}</td>
              <td data-label="Created">{formatTime(l.created)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function NewLabel() {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const create = useAction(async () => {
    const r = await must(api.POST("/v1/labels", { body: { name, ...(description ? { description } : {}) } }));
    navigate(href(["labels", r.label.labelId], { tab: "editor" }));
  });
  if (!open) {
    return (
      <button type="button" onClick={() => setOpen(true)}>
        New label
      </button>
    );
  }
  return (
    <form class="card" onSubmit={create.onSubmit} aria-label="New label">
      <label>
        Name
        <input type="text" required maxLength={200} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <label>
        Description
        <input type="text" maxLength={10000} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={create.busy}>
        Create label
      </button>
      <button type="button" class="link" onClick={() => setOpen(false)}>
        Cancel
      </button>
      <ErrorNote error={create.error} />
    </form>
  );
}

// The shell: a skip link, the navigation for the key's account type, and
// the page of the current fragment. Without a key every route shows the
// sign-in page, and after signing in the route the user asked for. A
// reviewer key sees the review pages and the jobs its items point to only.
import { useEffect, useRef, useState } from "preact/hooks";
import { session, type AccountType } from "./api";
import { Batches } from "./pages/Batches";
import { JobDetail } from "./pages/JobDetail";
import { Jobs } from "./pages/Jobs";
import { LabelDetail } from "./pages/LabelDetail";
import { Labels } from "./pages/Labels";
import { Policies, PolicyDetail } from "./pages/Policies";
import { Review } from "./pages/Review";
import { SignIn } from "./pages/SignIn";
import { href, navigate, useRoute, type Route } from "./router";

interface NavItem {
  path: string;
  name: string;
  // The kinds of session whose API the page uses.
  types: AccountType[];
}

const nav: NavItem[] = [
  { path: "jobs", name: "Jobs", types: ["policy-first", "label-first"] },
  { path: "labels", name: "Labels", types: ["label-first"] },
  { path: "policies", name: "Policies", types: ["policy-first"] },
  { path: "batches", name: "Batch jobs", types: ["policy-first"] },
  { path: "review", name: "Review", types: ["policy-first", "label-first", "reviewer"] },
];

// home is the first page of a kind of session.
const home = (type: AccountType) => (type === "reviewer" ? "review" : "jobs");

function Page({ route, type }: { route: Route; type: AccountType }) {
  const [first, second] = route.parts;
  if (type === "reviewer" && first !== "review" && !(first === "jobs" && second)) {
    return first === undefined ? (
      <Review />
    ) : (
      <section class="state forbidden" data-state="forbidden">
        <h1>Not available to a reviewer key</h1>
        <p>
          A reviewer key reaches the review pages and the jobs of its items. <a href={href(["review"])}>Go to the review</a>
        </p>
      </section>
    );
  }
  switch (first) {
    case undefined:
    case "jobs":
      return second ? <JobDetail key={second} jobUuid={second} /> : <Jobs route={route} />;
    case "labels":
      return second ? <LabelDetail key={second} labelId={second} route={route} /> : <Labels />;
    case "policies":
      return second ? <PolicyDetail key={second} policyId={second} route={route} /> : <Policies />;
    case "batches":
      return <Batches />;
    case "review":
      return <Review />;
    default:
      return (
        <section class="state error" data-state="not-found">
          <h1>No such page</h1>
          <p>
            <a href={href(["jobs"])}>Go to the jobs</a>
          </p>
        </section>
      );
  }
}

export function App() {
  const route = useRoute();
  const [type, setType] = useState<AccountType | null>(() => (session.key() ? session.accountType() : null));
  const [notice, setNotice] = useState("");
  const main = useRef<HTMLElement>(null);

  useEffect(
    () =>
      session.onSignedOut((reason) => {
        setType(null);
        setNotice(reason);
      }),
    [],
  );

  // A new page moves the focus to its content, as a page load would, so
  // keyboard and screen reader users start there.
  const path = route.parts.join("/");
  const firstRender = useRef(true);
  useEffect(() => {
    if (firstRender.current) {
      firstRender.current = false;
      return;
    }
    main.current?.focus();
  }, [path]);

  const signedIn = type !== null;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href([type ? home(type) : "jobs"])}>
          contenteval <span>console</span>
        </a>
        {signedIn && (
          <nav aria-label="Main">
            <ul>
              {nav
                .filter((n) => type !== null && n.types.includes(type))
                .map((n) => (
                  <li key={n.path}>
                    <a href={href([n.path])} aria-current={(route.parts[0] ?? (type ? home(type) : "jobs")) === n.path ? "page" : undefined}>
                      {n.name}
                    </a>
                  </li>
                ))}
            </ul>
          </nav>
        )}
        {signedIn && (
          <div class="account">
            <span class="meta">{type === "reviewer" ? "reviewer key" : `${type} account`}</span>
            <button type="button" class="link" onClick={() => session.signOut("Signed out.")}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {type !== null ? (
          <Page route={route} type={type} />
        ) : (
          <SignIn
            notice={notice}
            onSignedIn={(t) => {
              setNotice("");
              setType(t);
              if (route.parts.length === 0) navigate(href([home(t)]));
            }}
          />
        )}
      </main>
    </>
  );
}

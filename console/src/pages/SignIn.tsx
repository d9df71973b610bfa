import { useState } from "preact/hooks";
import { probeAccount, session, type AccountType } from "../api";
import { ErrorNote } from "../components/States";
import { useAction } from "../hooks";

export function SignIn({ notice, onSignedIn }: { notice?: string; onSignedIn: (type: AccountType) => void }) {
  const [key, setKey] = useState("");

  const signIn = useAction(async () => {
    const k = key.trim();
    if (!k) return;
    const type = await probeAccount(k);
    session.signIn(k, type);
    setKey("");
    onSignedIn(type);
  });

  return (
    <section class="signin" aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in</h1>
      <p>
        Paste an API key (made with <code>contenteval keys create --account ID</code>). It is kept in this tab only
        (sessionStorage) and sent as the bearer token; closing the tab forgets it.
      </p>
      {notice && (
        <p class="note" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={signIn.onSubmit}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
        />
        <button type="submit" disabled={signIn.busy}>
          {signIn.busy ? "Checking…" : "Sign in"}
        </button>
      </form>
      <ErrorNote error={signIn.error} />
    </section>
  );
}

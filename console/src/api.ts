// The console's only way to the server: a client generated from openapi.yaml
// (openapi-typescript types, openapi-fetch requests), authenticated with the
// API key the user pasted. The key lives in sessionStorage (gone when the tab
// closes) and travels as the bearer token; there are no cookies, so there is
// no ambient credential a forged request could ride on.
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/schema";

export type Schemas = components["schemas"];
export type Job = Schemas["Job"];
export type LabelHit = Schemas["LabelHit"];
export type FlaggedSpan = Schemas["FlaggedSpan"];
export type EvaluationReport = Schemas["EvaluationReport"];
export type FeedbackAnnotation = Schemas["FeedbackAnnotation"];
// The kind of session: the account type of a key that reads the account's
// jobs, or a reviewer key, which reaches the review pages and the jobs of
// its items only (docs/review.md).
export type AccountType = "policy-first" | "label-first" | "reviewer";

const keyItem = "contenteval.apiKey";
const typeItem = "contenteval.accountType";

// Listeners told when the key is dropped (signed out, or refused by the server).
const signedOutListeners = new Set<(reason: string) => void>();

export const session = {
  key(): string | null {
    return sessionStorage.getItem(keyItem);
  },
  accountType(): AccountType | null {
    const t = sessionStorage.getItem(typeItem);
    return t === "policy-first" || t === "label-first" || t === "reviewer" ? t : null;
  },
  signIn(key: string, type: AccountType): void {
    sessionStorage.setItem(keyItem, key);
    sessionStorage.setItem(typeItem, type);
  },
  signOut(reason = ""): void {
    sessionStorage.removeItem(keyItem);
    sessionStorage.removeItem(typeItem);
    for (const l of signedOutListeners) l(reason);
  },
  onSignedOut(l: (reason: string) => void): () => void {
    signedOutListeners.add(l);
    return () => signedOutListeners.delete(l);
  },
};

// The API is the parent of the console's path (/console/ -> /), so a
// server published under a path prefix behind a proxy works too.
export const apiBase = new URL("..", location.origin + location.pathname).href.replace(/\/$/, "");

export const api = createClient<paths>({ baseUrl: apiBase });

api.use({
  onRequest({ request }) {
    const key = session.key();
    if (key) request.headers.set("Authorization", `Bearer ${key}`);
    return request;
  },
  onResponse({ response }) {
    // A key that stops working (revoked, expired) ends the session: every
    // page would only show the same error.
    if (response.status === 401 && session.key()) {
      session.signOut("The server refused the API key (expired or revoked?). Sign in again.");
    }
    return response;
  },
});

type StatusDetail = Schemas["StatusDetail"] | Schemas["PrecheckFailureDetail"];

// gRPC codes the console tells apart (openapi.yaml, info.description).
export const Code = { PermissionDenied: 7, FailedPrecondition: 9, NotFound: 5, Unauthenticated: 16 } as const;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly details: StatusDetail[],
  ) {
    super(message);
  }

  // The account type gate answers FAILED_PRECONDITION "... is only available
  // to policy-first accounts"; PERMISSION_DENIED is forbidden whatever it says.
  get forbidden(): boolean {
    return this.code === Code.PermissionDenied || (this.code === Code.FailedPrecondition && /only available to/.test(this.message));
  }

  compilationErrors(): Schemas["CompilationError"][] {
    const out: Schemas["CompilationError"][] = [];
    for (const d of this.details) {
      if (d["@type"] === "type.googleapis.com/contenteval.CompilationErrors") out.push(...d.errors);
    }
    return out;
  }

  fieldViolations(): Schemas["FieldViolation"][] {
    const out: Schemas["FieldViolation"][] = [];
    for (const d of this.details) {
      if (d["@type"] === "type.googleapis.com/google.rpc.BadRequest") out.push(...d.fieldViolations);
    }
    return out;
  }
}

function isStatusLike(v: unknown): v is { code?: unknown; message?: unknown; details?: unknown } {
  return typeof v === "object" && v !== null;
}

export function toApiError(response: Response | undefined, body: unknown): ApiError {
  const status = response?.status ?? 0;
  if (isStatusLike(body)) {
    const code = typeof body.code === "number" ? body.code : 0;
    const message = typeof body.message === "string" ? body.message : `HTTP ${status}`;
    const details = Array.isArray(body.details) ? (body.details as StatusDetail[]) : [];
    return new ApiError(status, code, message, details);
  }
  return new ApiError(status, 0, status ? `HTTP ${status}` : "The server could not be reached.", []);
}

// must unwraps an openapi-fetch answer: its data, or an ApiError.
export async function must<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let r: { data?: T; error?: unknown; response: Response };
  try {
    r = await call;
  } catch (e) {
    throw new ApiError(0, 0, `The server could not be reached: ${e instanceof Error ? e.message : String(e)}`, []);
  }
  if (r.response.ok && r.data !== undefined) return r.data;
  throw toApiError(r.response, r.error);
}

// loadAll reads every page of a list (at most limit items), for the views
// that need a whole list: a label's or a policy's versions, a label's
// examples (at most 10,000 by the API's own limit).
export async function loadAll<T>(page: (token: string | undefined) => Promise<{ items: T[]; next?: string | undefined }>, limit = 10_000): Promise<T[]> {
  const out: T[] = [];
  let token: string | undefined;
  do {
    const p = await page(token);
    out.push(...p.items);
    token = p.next;
  } while (token && out.length < limit);
  return out;
}

// probeAccount checks a key and learns its kind of session: listing jobs
// works for both account types, listing policies only for policy-first
// accounts, and a reviewer key may do neither but reads the review queues.
export async function probeAccount(key: string): Promise<AccountType> {
  const headers = { Authorization: `Bearer ${key}` };
  const probe = createClient<paths>({ baseUrl: apiBase, headers });
  try {
    await must(probe.GET("/v1/jobs", { params: { query: { pageSize: 1 } } }));
  } catch (e) {
    // A reviewer key may not list jobs; it may read the review queues.
    if (!(e instanceof ApiError && e.forbidden)) throw e;
    await must(probe.GET("/v1/review-queues", {}));
    return "reviewer";
  }
  try {
    await must(probe.GET("/v1/policies", { params: { query: { pageSize: 1 } } }));
    return "policy-first";
  } catch (e) {
    if (e instanceof ApiError && e.forbidden) return "label-first";
    throw e;
  }
}

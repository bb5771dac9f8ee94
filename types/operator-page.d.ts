// What the operator page's scripts (src/http/ui/) share through the page's global scope: session.js
// sets window.gatehouseSession, page.js reads it. Read only by their type check
// (tsconfig.checkjs.ui.json); the browser never sees this file.

/** GET /auth/session's answer while signed in (docs/spec.md section 5.2.1). */
interface Session {
  sub: string;
  team?: string;
  /** The ID token's display name; null without one. */
  name?: string | null;
  can: { decide: boolean };
  csrf_token: string;
}

interface GatehouseSession {
  /** Resolves once known: the signed-in session, or null (not signed in, or sign-in is off). */
  ready: Promise<Session | null>;
  /** The session while signed in, else null. */
  current(): Session | null;
  /** The headers of a request made with the session (the browser adds the cookie). */
  headers(): Record<string, string>;
  /** A 401 with the session: it has ended. */
  lost(): void;
}

interface Window {
  gatehouseSession: GatehouseSession;
}

declare var gatehouseSession: GatehouseSession;

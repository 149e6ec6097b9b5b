/**
 * Sign-in that keeps the page a person asked for: proxy.ts passes every console request's path
 * (and query) to the server in REQUESTED_PATH_HEADER, overwriting whatever the client sent, and an
 * anonymous visitor is sent to `/login?from=<that path>`. The login page and action accept only a
 * path on this site (app/(auth)/login/safe-redirect.ts), so the header cannot send anyone elsewhere.
 */
import { headers } from "next/headers";
import { redirect } from "next/navigation";

export const REQUESTED_PATH_HEADER = "x-airlock-requested-path";

export async function redirectToSignIn(): Promise<never> {
  let path: string | null = null;
  try {
    path = (await headers()).get(REQUESTED_PATH_HEADER);
  } catch {
    // Outside a request (a script, a test) there is no page to return to.
  }
  redirect(path && path !== "/" && !path.startsWith("/login") ? `/login?from=${encodeURIComponent(path)}` : "/login");
}

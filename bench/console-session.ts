/**
 * A console session for benchmarks that load pages over HTTP, as a browser would: cookies kept
 * from every Set-Cookie and sent back, and next-auth's credentials sign-in (CSRF token first).
 * Refuses (throws) when the sign-in sets no session cookie.
 */

/** Cookies as a browser keeps them: name=value from every Set-Cookie, sent back on each request. */
export class Jar {
  private readonly cookies = new Map<string, string>();
  take(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair!.indexOf("=");
      this.cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
  }
  header() {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }
}

/** Signs `email` in at `base`; `request` is the fetch to count the requests with, if any. */
export async function signIn(base: string, email: string, password: string, request: typeof fetch = fetch): Promise<Jar> {
  const jar = new Jar();
  const csrf = await request(`${base}/api/auth/csrf`);
  jar.take(csrf);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const response = await request(`${base}/api/auth/callback/credentials`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: base },
    body: new URLSearchParams({ email, password, csrfToken, callbackUrl: `${base}/audit` }),
  });
  jar.take(response);
  if (!jar.header().includes("session-token")) throw new Error(`sign-in failed: HTTP ${response.status}`);
  return jar;
}

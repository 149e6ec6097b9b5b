/**
 * next-auth (v5) configuration: password sign-in (argon2id, rate-limited, audited — lib/auth/users.ts)
 * and, when AIRLOCK_OIDC_* are set, single sign-on through any OIDC provider. SSO never creates
 * accounts: the provider must assert a verified email (`email_verified`), and it must belong to an
 * existing, enabled user, whose role an admin set.
 *
 * Password sign-in is throttled per account at the client's address and per address
 * (lib/auth/login-throttle.ts); the address comes from lib/auth/client-address.ts.
 *
 * Sessions are JWTs holding only the user id and the user's session version at sign-in; the role
 * is re-read from the database on every request (currentUser, lib/auth/session.ts), which also
 * treats a session of an older version as anonymous, so a role change, a disabled account or a
 * sign-out takes effect at once. Signing out raises the version — ending the person's sessions on
 * every device — and is audited (`auth.signed_out`, by the person, through the signOut event); a
 * failure to record it is logged by next-auth and the session cookie is cleared anyway.
 */
import NextAuth, { CredentialsSignin, type NextAuthConfig } from "next-auth";
import Credentials from "next-auth/providers/credentials";
import { env } from "@/lib/env";
import { prisma } from "@/lib/db";
import { clientAddress } from "./client-address";
import { endSessions, signInWithPassword } from "./users";

declare module "next-auth" {
  interface Session {
    sessionVersion?: number;
  }
}

export class RateLimitedSignin extends CredentialsSignin {
  code = "rate_limited";
}

function buildConfig(): NextAuthConfig {
  const config = env();
  const providers: NextAuthConfig["providers"] = [
    Credentials({
      credentials: { email: { type: "email" }, password: { type: "password" } },
      async authorize(credentials, request) {
        const result = await signInWithPassword(prisma(), credentials?.email, credentials?.password, { address: clientAddress(request.headers) });
        if (result.ok) return { id: result.user.id, email: result.user.email, name: result.user.name };
        if (result.reason === "rate_limited") throw new RateLimitedSignin();
        return null;
      },
    }),
  ];
  if (config.AIRLOCK_OIDC_ISSUER && config.AIRLOCK_OIDC_CLIENT_ID && config.AIRLOCK_OIDC_CLIENT_SECRET) {
    providers.push({
      id: "oidc",
      name: "Single sign-on",
      type: "oidc",
      issuer: config.AIRLOCK_OIDC_ISSUER,
      clientId: config.AIRLOCK_OIDC_CLIENT_ID,
      clientSecret: config.AIRLOCK_OIDC_CLIENT_SECRET,
    });
  }
  return {
    secret: config.AUTH_SECRET,
    trustHost: true,
    session: { strategy: "jwt", maxAge: 12 * 60 * 60 },
    pages: { signIn: "/login" },
    logger: {
      // A wrong password is an expected outcome (already counted and audited), not a server error.
      error(error) {
        if (error instanceof CredentialsSignin) return;
        console.error("[auth]", error);
      },
    },
    providers,
    events: {
      async signOut(message) {
        const token = "token" in message ? message.token : null;
        if (token?.sub && typeof token.sessionVersion === "number") await endSessions(prisma(), token.sub, token.sessionVersion);
      },
    },
    callbacks: {
      async signIn({ user, account, profile }) {
        if (account?.provider !== "oidc") return true;
        // An email the identity provider has not verified proves nothing about who signs in.
        if (profile?.email_verified !== true) return false;
        const email = user.email?.trim().toLowerCase();
        if (!email) return false;
        const known = await prisma().user.findUnique({ where: { email } });
        if (!known || known.disabledAt) return false;
        user.id = known.id;
        return true;
      },
      async jwt({ token, user }) {
        // At sign-in only: the session is bound to the version the person has now.
        if (user?.id) {
          const row = await prisma().user.findUnique({ where: { id: user.id }, select: { sessionVersion: true } });
          token.sub = user.id;
          token.sessionVersion = row?.sessionVersion;
        }
        return token;
      },
      session({ session, token }) {
        if (token.sub) session.user.id = token.sub;
        if (typeof token.sessionVersion === "number") session.sessionVersion = token.sessionVersion;
        return session;
      },
    },
  };
}

export const { handlers, auth, signIn, signOut } = NextAuth(() => buildConfig());

export function oidcEnabled(): boolean {
  return Boolean(env().AIRLOCK_OIDC_ISSUER);
}

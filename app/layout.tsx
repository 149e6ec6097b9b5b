import type { Metadata } from "next";
import { connection } from "next/server";
import type { ReactNode } from "react";
import "./globals.css";

export const metadata: Metadata = {
  title: { default: "Airlock", template: "%s · Airlock" },
  description: "Governed runtime for code execution with MCP",
};

export default async function RootLayout({ children }: { children: ReactNode }) {
  // Every page is rendered per request, so Next can put the request's CSP nonce (proxy.ts) on its
  // scripts; a page prerendered at build time would carry none, and its scripts would be refused.
  await connection();
  return (
    <html lang="en">
      <body className="min-h-screen">{children}</body>
    </html>
  );
}

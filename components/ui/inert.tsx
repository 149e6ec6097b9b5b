/**
 * Renders agent-, script- and tool-supplied text for people: plain characters as React text
 * nodes, and every hidden character (lib/untrusted/invisible.ts: controls including ESC, format and
 * bidi characters, U+2028/U+2029, default-ignorables; one per code point) as a marker element
 *   <span data-invisible="U+2028" title="U+2028 LINE SEPARATOR …">U+2028</span>
 * styled apart from text. The marker is made from the character itself, never from text, so a
 * script that writes "U+2028" or "⟦U+2028⟧" gets plain text, and the hidden character never
 * reaches the DOM (where it could break a line, reorder text or vanish).
 *
 * No hooks, no "use client": usable from server and client components alike.
 */
import { Fragment } from "react";
import { segments } from "@/lib/untrusted/invisible";

export const MARKER_CLASS =
  "mx-px inline-block rounded-sm border border-amber-500 bg-amber-200 px-0.5 align-baseline font-mono text-[0.85em] leading-none font-semibold not-italic text-amber-950 no-underline";

export function Marker({ label, name }: { label: string; name: string }) {
  return (
    <span data-invisible={label} title={`${label} ${name} (invisible in the original text)`} className={MARKER_CLASS}>
      {label}
    </span>
  );
}

/** `text` with each hidden character shown as a marker element. */
export function Inert({ text }: { text: string }) {
  const parts = segments(text);
  if (parts.length === 1 && parts[0]!.kind === "text") return <>{text}</>;
  return (
    <>{parts.map((part, i) => (part.kind === "text" ? <Fragment key={i}>{part.text}</Fragment> : <Marker key={i} label={part.label} name={part.name} />))}</>
  );
}

/** `Inert` for an optional value, with a fallback when it is missing. */
export function InertOr({ text, fallback }: { text: string | null | undefined; fallback: string }) {
  return text ? <Inert text={text} /> : <>{fallback}</>;
}

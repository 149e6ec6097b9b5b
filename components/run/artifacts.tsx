/**
 * The run page's artifacts: each file the script wrote under ./out/ with its size, media type,
 * sha256 and download link, and its preview — a CSV as a table, JSON as a collapsible tree
 * (<details>, no script), a PNG or SVG as an `<img>` from the image route. Everything is inert
 * text from the presenter rendered as React text nodes (components/ui/inert.tsx); an SVG is only
 * ever the `src` of an `<img>`, never inline markup, an <object> or a frame.
 */
import { Inert } from "@/components/ui/inert";
import { Badge } from "@/components/ui/primitives";
import { Time } from "@/components/ui/time";
import type { ArtifactItem, ArtifactPreview, TreeNode } from "@/lib/review/dto";

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

function TablePreview({ preview, name }: { preview: Extract<ArtifactPreview, { kind: "table" }>; name: string }) {
  return (
    <div className="max-h-96 overflow-auto rounded-md border border-slate-200" tabIndex={0} role="region" aria-label={`Table preview of ${name}`}>
      <table className="min-w-full divide-y divide-slate-200 text-xs" data-testid="artifact-table">
        <thead className="sticky top-0 bg-slate-50">
          <tr>
            {preview.header.map((cell, i) => (
              <th key={i} scope="col" className="px-2 py-1 text-left font-semibold whitespace-pre-wrap text-slate-700">
                <Inert text={cell} />
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-100">
          {preview.rows.map((row, r) => (
            <tr key={r}>
              {row.map((cell, c) => (
                <td key={c} className="px-2 py-1 align-top font-mono whitespace-pre-wrap break-words">
                  <Inert text={cell} />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      {preview.truncated ? (
        <p className="px-2 py-1 text-xs text-slate-500">Only the first rows and columns are shown; download the file for all of it.</p>
      ) : null}
    </div>
  );
}

function TreeItem({ node, depth }: { node: TreeNode; depth: number }) {
  const key =
    node.key === null ? null : (
      <span className="text-slate-500">
        <Inert text={node.key} />:{" "}
      </span>
    );
  if (!node.children) {
    return (
      <li>
        {key}
        <span className={node.type === "string" ? "text-teal-900" : "text-indigo-900"} data-type={node.type}>
          {node.type === "string" ? (
            <>
              &quot;
              <Inert text={node.value ?? ""} />
              &quot;
            </>
          ) : (
            node.value
          )}
        </span>
      </li>
    );
  }
  const count = node.children.length + (node.hidden ?? 0);
  return (
    <li>
      <details open={depth < 2}>
        <summary className="cursor-pointer">
          {key}
          <span className="text-slate-500">{node.type === "array" ? `[${count}]` : `{${count}}`}</span>
        </summary>
        <ul className="ml-4 border-l border-slate-200 pl-2">
          {node.children.map((child, i) => (
            <TreeItem key={i} node={child} depth={depth + 1} />
          ))}
          {node.hidden ? <li className="text-slate-500">… {node.hidden} more not shown</li> : null}
        </ul>
      </details>
    </li>
  );
}

function Preview({ artifact }: { artifact: ArtifactItem }) {
  const { preview } = artifact;
  if (preview.kind === "table") return <TablePreview preview={preview} name={artifact.name} />;
  if (preview.kind === "tree") {
    return (
      <div className="max-h-96 overflow-auto rounded-md bg-slate-50 p-2 font-mono text-xs" data-testid="artifact-tree">
        <ul>
          <TreeItem node={preview.root} depth={0} />
        </ul>
        {preview.truncated ? <p className="mt-1 text-slate-500">Deep or long parts are cut; download the file for all of it.</p> : null}
      </div>
    );
  }
  if (preview.kind === "image" && artifact.imageUrl) {
    // A plain <img>: the route sends the bytes only as a checked PNG or SVG, sandboxed; an SVG drawn
    // by <img> runs no script and loads nothing. Lazy: fetched (and audited) once, when shown, with
    // no preload of React's beside it.
    return (
      <img
        src={artifact.imageUrl}
        loading="lazy"
        alt={`Preview of ${artifact.name}`}
        className="max-h-96 max-w-full rounded-md border border-slate-200 bg-white"
        data-testid="artifact-image"
      />
    );
  }
  return <p className="text-xs text-slate-500">{preview.kind === "none" ? `No preview: ${preview.reason}.` : "No preview."}</p>;
}

export function Artifacts({ artifacts }: { artifacts: ArtifactItem[] }) {
  if (artifacts.length === 0) return <p className="text-sm text-slate-600">The script wrote no files under ./out/.</p>;
  return (
    <ul className="space-y-3" data-testid="artifacts">
      {artifacts.map((artifact) => (
        <li key={artifact.name} className="space-y-2 rounded-md border border-slate-200 p-3" data-testid="artifact" data-name={artifact.name}>
          <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1 text-sm">
            <span className="font-mono font-medium">
              <Inert text={artifact.name} />
            </span>
            <span className="text-slate-600">{size(artifact.sizeBytes)}</span>
            {artifact.mediaType ? <Badge>{artifact.mediaType}</Badge> : null}
            {artifact.downloadUrl ? (
              <a href={artifact.downloadUrl} download className="text-teal-800 underline" data-testid="artifact-download">
                Download
              </a>
            ) : artifact.purgedAt ? (
              <span className="text-slate-600">
                purged by retention on <Time iso={artifact.purgedAt} />
              </span>
            ) : null}
          </div>
          <p className="text-xs break-all text-slate-500">
            sha256 <code>{artifact.sha256}</code>
          </p>
          <Preview artifact={artifact} />
        </li>
      ))}
    </ul>
  );
}

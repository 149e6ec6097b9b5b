/**
 * The review console's DTO types, for components. Type-only re-exports: nothing of the
 * server-only presenters reaches a client bundle through this file.
 */
export type { CallArgument, ToolUse, ToolUses } from "./tool-uses";
export type { DecisionBlocker, DecisionBlockerCode } from "./decision-rules";
export type { DiffLine, LineDiff } from "@/lib/untrusted/diff";
export type { HighlightedLine, Token, TokenKind } from "./highlight";
export type { QueueFilters, QueueItem, QueueView } from "./queue-presenter";
export type { RunRow } from "./runs-presenter";
export type { Effect, Risk, RiskLevel, RunFacts } from "./risk";
export type { ArtifactPreview, TreeNode } from "@/lib/runs/artifacts-preview";
export type {
  ArtifactItem,
  CapabilityItem,
  CodeView,
  DecisionBinding,
  FindingItem,
  InputItem,
  OutcomeView,
  PreviousAttempt,
  ProvenanceView,
  ReasonItem,
  ReviewItem,
  RunDetail,
  SameCodeItem,
  TimelineItem,
  ToolCallItem,
  ViewerView,
} from "./run-dto";

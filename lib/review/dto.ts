/**
 * The review console's DTO types, for components. Type-only re-exports: nothing of the
 * server-only presenter reaches a client bundle through this file.
 */
export type {
  CapabilityItem,
  Effect,
  FindingItem,
  InputItem,
  QueueFilters,
  QueueItem,
  QueueView,
  ReviewItem,
  RunDetail,
  RunRow,
  TimelineItem,
  ToolCallItem,
} from "./presenter";
export type { DiffLine, LineDiff } from "./diff";
export type { HighlightedLine, Token, TokenKind } from "./highlight";

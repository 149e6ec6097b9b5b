/**
 * Public API of the tool broker: config loading, the MCP client registry (pinning, quarantine,
 * validation), declaration generation and search. See broker.ts for the guarantees.
 */
export {
  ToolBroker,
  ToolCallError,
  BrokerError,
  DEFAULT_BROKER_LIMITS,
  UNAVAILABLE_RETRY_MS,
  toolHash,
  type SearchAnswer,
  type SearchDetail,
  type SearchHit,
} from "./broker";
export { loadConfig, parseConfig, ConfigError, type AirlockConfig, type ServerConfig } from "./config";
export type { PinStore } from "./pins";
export { generateDeclarations } from "./declarations";
export type { ToolInfo } from "./types";

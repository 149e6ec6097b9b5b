/**
 * Public API of the tool broker: config loading, the MCP client registry (pinning, quarantine,
 * validation), declaration generation and search. See broker.ts for the guarantees.
 */
export { ToolBroker, ToolCallError, BrokerError, DEFAULT_BROKER_LIMITS, toolHash, type SearchDetail, type SearchHit } from "./broker";
export { loadConfig, parseConfig, ConfigError, DATA_CLASSES, type AirlockConfig, type ServerConfig, type DataClass } from "./config";
export { JsonFilePinStore, type PinStore } from "./pins";
export { generateDeclarations, schemaToType } from "./declarations";
export type { ToolInfo, ToolAnnotations, BrokerCallRecord } from "./types";

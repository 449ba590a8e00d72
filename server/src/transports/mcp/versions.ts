/**
 * The MCP protocol versions this endpoint serves, and what each one changes (docs/MCP.md, "Versions").
 *
 * - Legacy (handshake) era: 2025-11-25, 2025-06-18, 2025-03-26 (our spec's) and 2024-11-05 — a
 *   session opened by `initialize`, whose negotiated version governs every later request.
 * - Modern (stateless) era: 2026-07-28 — no handshake; every request names its version in `_meta`.
 *
 * Revision identifiers are ISO dates, so comparing the strings orders them in time.
 */
export const LEGACY_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;
export const MODERN_VERSIONS = ['2026-07-28'] as const;
/** Every version we serve, newest first: `server/discover`'s `supportedVersions` and -32022's `supported`. */
export const ALL_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...LEGACY_VERSIONS];

/**
 * What `initialize` answers a client asking for a version we do not speak. 2025-06-18 lifecycle:
 * "If the server supports the requested protocol version, it MUST respond with the same version.
 * Otherwise, the server MUST respond with another protocol version it supports. This SHOULD be the
 * latest version supported by the server." — the latest of the versions `initialize` can negotiate.
 */
export const LATEST_LEGACY = LEGACY_VERSIONS[0];

/**
 * 2025-06-18 / 2025-11-25 Streamable HTTP: "For backwards compatibility, if the server does not receive
 * an MCP-Protocol-Version header, and has no other way to identify the version - for example, by
 * relying on the protocol version negotiated during initialization - the server SHOULD assume protocol
 * version 2025-03-26." (A session's own negotiated version is that "other way" when sessions are on.)
 */
export const HEADERLESS_VERSION = '2025-03-26';

export const isLegacyVersion = (v: string): boolean => (LEGACY_VERSIONS as readonly string[]).includes(v);
export const isModernVersion = (v: string): boolean => (MODERN_VERSIONS as readonly string[]).includes(v);

/** JSON-RPC batches: part of 2025-03-26 (and 2024-11-05); removed in 2025-06-18 (changelog: "Remove support for JSON-RPC batching"). */
export const allowsBatches = (v: string): boolean => v <= '2025-03-26';

/** Structured tool output (`outputSchema`, `structuredContent`): added in 2025-06-18. */
export const hasStructuredOutput = (v: string): boolean => v >= '2025-06-18';

/**
 * Tool names (2025-11-25, server/tools "Tool Names"): "Tool names SHOULD be between 1 and 128
 * characters in length (inclusive)", "case-sensitive", and "The following SHOULD be the only allowed
 * characters: uppercase and lowercase ASCII letters (A-Z, a-z), digits (0-9), underscore (_), hyphen
 * (-), and dot (.)"; "Tool names SHOULD be unique within a server." Checked at start (tools.ts).
 */
export const TOOL_NAME_RE = /^[A-Za-z0-9_.-]{1,128}$/;

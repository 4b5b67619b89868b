// nats-server configuration keys Switchyard accepts but does not act on yet, in
// one place: a file written for nats-server loads without warnings for these,
// and implementing one means moving it from here into src/config/schema.ts.

/** One list per block. */
export const notImplementedKeys = {
  top: [
    "gateway",
    "routes",
    "connect_error_reports",
    "reconnect_error_reports",
    "max_traced_msg_len",
    "trace_verbose",
    "client_advertise",
    "prof_port",
    "prof_block_rate",
    "operator",
    "operators",
    "root_operators",
    "trusted",
    "trusted_keys",
    "resolver",
    "resolver_tls",
    "resolver_preload",
    "resolver_pinned_accounts",
    "no_system_account",
    "allow_non_tls",
    "ocsp",
    "ocsp_cache",
    "disable_sublist_cache",
    "no_sublist_cache",
    "mappings",
    "server_tags",
    "server_metadata",
    "default_js_domain",
    "jetstream_max_memory",
    "jetstream_max_storage",
    "nkey",
    "tls_timeout",
    "write_timeout",
    "no_fast_producer_stall",
    "max_tracked_responses",
    "ping_interval_jitter"
  ],
  tls: [
    "cipher_suites",
    "curve_preferences",
    "insecure",
    "pinned_certs",
    "verify_and_map",
    "verify_cert_and_check_known_urls",
    "handshake_first",
    "first",
    "min_version",
    "cert_store",
    "cert_match",
    "cert_match_by",
    "ca_certs_match",
    "cert_match_skip_invalid",
    "ocsp_peer",
    "certs",
    "connection_rate_limit"
  ],
  user: ["allowed_connection_types", "connection_types", "allowed_connection_type"],
  authorization: ["auth_callout", "callout"],
  account: ["nkey", "mappings", "default_permissions", "limits", "msg_trace", "trace_dest", "cluster_traffic"],
  export: [
    "response_type",
    "response",
    "response_threshold",
    "threshold",
    "latency",
    "account_token_position",
    "advertise",
    "allow_trace"
  ],
  import: ["share", "allow_trace"],
  jetstream: [
    "unique_tag",
    "max_outstanding_catchup",
    "sync_always",
    "compress_ok",
    "strict",
    "cipher",
    "key",
    "prev_key",
    "max_buffered_msgs",
    "max_buffered_size",
    "request_queue_limit",
    "limits",
    "max_ha_assets",
    "max_request_batch",
    "extension_hint",
    "tpm",
    "max_catchup"
  ],
  mqtt: [
    "js_domain",
    "stream_replicas",
    "consumer_replicas",
    "consumer_memory_storage",
    "consumer_inactive_threshold",
    "js_api_timeout",
    "reject_qos2_publish",
    "downgrade_qos2_subscribe"
  ],
  websocket: [
    "advertise",
    "same_origin",
    "allowed_origins",
    "authorization",
    "no_auth_user",
    "jwt_cookie",
    "username_cookie",
    "password_cookie",
    "token_cookie",
    "headers",
    "no_auth_timeout"
  ]
} as const

/**
 * Of the keys above, those whose absence would leave the server less secure than
 * the configuration asks (any certificate where pinned ones were meant, users
 * allowed where JWTs or a callout would decide, weaker TLS): the server refuses to
 * start with them instead of warning.
 */
export const refusedKeys: { readonly [B in keyof typeof notImplementedKeys]?: ReadonlyArray<string> } = {
  top: ["operator", "operators", "root_operators", "trusted", "trusted_keys", "resolver", "resolver_tls", "resolver_preload", "resolver_pinned_accounts"],
  tls: ["cipher_suites", "curve_preferences", "pinned_certs", "verify_and_map", "verify_cert_and_check_known_urls", "min_version", "ocsp_peer", "cert_match", "cert_match_by"],
  user: ["allowed_connection_types", "connection_types", "allowed_connection_type"],
  authorization: ["auth_callout", "callout"],
  account: ["default_permissions"]
}

/** Account `jetstream` maps are accepted, but their limits are not enforced yet. */
export const accountJetStreamLimits = "account JetStream limits are not enforced by this version"

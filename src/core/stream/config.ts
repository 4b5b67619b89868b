// The limits a stream store enforces and how a message's size is counted against
// them. Field names follow the JetStream stream config; `max_age_ms` is in
// milliseconds (the API layer converts JetStream's nanoseconds at its edge).

export type DiscardPolicy = "old" | "new"
export type StorageType = "file" | "memory"

export interface StoreConfig {
  /** Informational here (routing is the server's job), persisted with the store. */
  readonly subjects: ReadonlyArray<string>
  /** 0 or less: unlimited (JetStream uses -1). */
  readonly max_msgs: number
  readonly max_bytes: number
  readonly max_age_ms: number
  /** Limit on headers + payload of one message. */
  readonly max_msg_size: number
  readonly max_msgs_per_subject: number
  readonly discard: DiscardPolicy
  /** With `discard: "new"`, also reject when a subject is at `max_msgs_per_subject`. */
  readonly discard_new_per_subject: boolean
  readonly storage: StorageType
  /**
   * Messages may carry a `Nats-TTL` (see ttl.ts): recovery reads it back from their headers.
   * Once on, never off (the API refuses that), so every TTL a stored message has counts.
   */
  readonly allow_msg_ttl: boolean
}

export const defaultStoreConfig: StoreConfig = {
  subjects: [],
  max_msgs: -1,
  max_bytes: -1,
  max_age_ms: 0,
  max_msg_size: -1,
  max_msgs_per_subject: -1,
  discard: "old",
  discard_new_per_subject: false,
  storage: "file",
  allow_msg_ttl: false
}

export const makeStoreConfig = (partial: Partial<StoreConfig> = {}): StoreConfig => ({
  ...defaultStoreConfig,
  ...partial
})

/** A limit is in force when positive. */
export const limited = (n: number): boolean => n > 0

/**
 * The bytes a message counts for in `state().bytes` and against `max_bytes`:
 * the record overhead nats-server reports for each storage type, so `/jsz` and
 * stream info show the numbers users are used to.
 */
export const msgSize = (storage: StorageType, subjectLen: number, hdrLen: number, payloadLen: number): number =>
  storage === "memory"
    ? subjectLen + hdrLen + payloadLen + 16
    : hdrLen > 0
    ? 34 + subjectLen + hdrLen + payloadLen
    : 30 + subjectLen + payloadLen

/** UTF-8 length of a string without allocating (subjects are usually ASCII). */
export const utf8Length = (s: string): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4
        i++
      } else n += 3
    } else n += 3
  }
  return n
}

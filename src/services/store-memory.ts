// The memory store: messages and meta held in the process. Streams outlive their
// handles (close then open gives the same data) but not the layer. The file store
// also uses it for streams configured with `storage: "memory"`.
import { Effect, Layer } from "effect"
import type { StoreConfig } from "../core/stream/config.js"
import { type IndexEntry, StreamIndex } from "../core/stream/stream-index.js"
import { MessageTtls } from "../core/stream/ttl.js"
import { makeStreamStore, Store, storeError, type StoredMsg, type StoreService, type StreamStore } from "./store.js"

interface MemMsg {
  readonly headers: Uint8Array | undefined
  readonly payload: Uint8Array
}

interface MemStream {
  config: StoreConfig
  readonly index: StreamIndex<MemMsg>
  /** Kept with the messages: a handle opened again finds them. */
  readonly ttls: MessageTtls
  readonly meta: Map<string, Uint8Array>
  handle: StreamStore | undefined
}

const healthy = { ok: true, problems: [] } as const

const readCached = (e: IndexEntry<MemMsg>): StoredMsg => ({
  seq: e.seq,
  subject: e.subject,
  ts: e.ts,
  headers: e.loc.headers,
  payload: e.loc.payload
})

const openHandle = (name: string, s: MemStream): StreamStore => {
  const handle = makeStreamStore(
    name,
    s.config,
    {
      index: s.index,
      ttls: s.ttls,
      append: (_seq, _subject, _subjectLen, headers, payload) => ({
        headers: headers === undefined ? undefined : headers.slice(),
        payload: payload.slice()
      }),
      skipped: () => {},
      removed: () => {},
      read: (e) => Effect.succeed(readCached(e)),
      readCached,
      // Memory never fails to take a write: nothing is ever refused for want of space.
      takeRefused: () => false,
      durableSeq: () => s.index.last,
      writtenSeq: () => s.index.last,
      outOfSpace: () => false,
      probe: () => Effect.void,
      persistConfig: (config) =>
        Effect.sync(() => {
          s.config = config
        }),
      sync: () => Effect.void,
      flush: () => Effect.void,
      compact: () => Effect.succeed(0),
      health: () => healthy,
      writeMeta: (key, value) => Effect.sync(() => void s.meta.set(key, value.slice())),
      readMeta: (key) => Effect.sync(() => s.meta.get(key)),
      deleteMeta: (key) => Effect.sync(() => void s.meta.delete(key)),
      listMeta: () => Effect.sync(() => [...s.meta.keys()].sort()),
      close: () => Effect.void
    },
    () => {
      if (s.handle === handle) s.handle = undefined
    }
  )
  s.handle = handle
  return handle
}

export const makeMemoryStore = (): StoreService => {
  const streams = new Map<string, MemStream>()
  return {
    create: (name, config, meta = []) =>
      Effect.suspend(() => {
        if (streams.has(name)) return Effect.fail(storeError("Exists", `stream '${name}' already exists`))
        const s: MemStream = { config, index: new StreamIndex(), ttls: new MessageTtls(), meta: new Map(meta.map(([k, v]) => [k, v.slice()])), handle: undefined }
        streams.set(name, s)
        return Effect.succeed(openHandle(name, s))
      }),
    open: (name) =>
      Effect.suspend(() => {
        const s = streams.get(name)
        if (s === undefined) return Effect.fail(storeError("NotFound", `stream '${name}' not found`))
        return Effect.succeed(s.handle ?? openHandle(name, s))
      }),
    delete: (name) =>
      Effect.suspend(() => {
        const s = streams.get(name)
        if (s === undefined) return Effect.fail(storeError("NotFound", `stream '${name}' not found`))
        streams.delete(name)
        return s.handle === undefined ? Effect.void : s.handle.close()
      }),
    list: () => Effect.sync(() => [...streams.keys()].sort())
  }
}

export const layerMemory: Layer.Layer<Store> = Layer.sync(Store, makeMemoryStore)

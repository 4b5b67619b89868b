// The Disk port: the few file operations the file store needs. Node's fs is one
// implementation (disk-node.ts); the simulation provides one that tears writes and
// forgets what was not synced, so the store only ever assumes what this promises:
//   - `write` data may be lost or torn until the file's `sync` completes;
//   - a created, renamed or unlinked name may be lost until `syncDir` of its folder;
//   - `rename` replaces the target atomically.
// Paths are "/"-joined strings.
import { Context, Data } from "effect"
import type { Effect } from "effect"

/** `message` says what failed without the file names, which are in `path`. */
export class DiskError extends Data.TaggedError("DiskError")<{
  readonly reason: "NotFound" | "Exists" | "NoSpace" | "Io"
  readonly path: string
  readonly message: string
}> {}

/** An open file, readable and writable at any position. */
export interface DiskFile {
  readonly write: (data: Uint8Array, position: number) => Effect.Effect<void, DiskError>
  readonly read: (position: number, length: number) => Effect.Effect<Uint8Array, DiskError>
  readonly size: () => Effect.Effect<number, DiskError>
  readonly truncate: (length: number) => Effect.Effect<void, DiskError>
  readonly sync: () => Effect.Effect<void, DiskError>
  readonly close: () => Effect.Effect<void, DiskError>
}

export interface DiskService {
  /** Create the folder and its parents; fine when it exists. */
  readonly mkdirp: (path: string) => Effect.Effect<void, DiskError>
  /** Names in a folder (not paths), sorted; NotFound when the folder is missing. */
  readonly list: (path: string) => Effect.Effect<ReadonlyArray<string>, DiskError>
  readonly readFile: (path: string) => Effect.Effect<Uint8Array, DiskError>
  /** Open for reading and writing; with `create`, a missing file is created empty. */
  readonly open: (path: string, create: boolean) => Effect.Effect<DiskFile, DiskError>
  readonly rename: (from: string, to: string) => Effect.Effect<void, DiskError>
  /** Remove a file; NotFound when missing. */
  readonly unlink: (path: string) => Effect.Effect<void, DiskError>
  /** Remove a folder and everything in it; fine when missing. */
  readonly removeAll: (path: string) => Effect.Effect<void, DiskError>
  /** Make the folder's entries (creates, renames, unlinks) durable. */
  readonly syncDir: (path: string) => Effect.Effect<void, DiskError>
}

export class Disk extends Context.Tag("switchyard/Disk")<Disk, DiskService>() {}

export const joinPath = (...parts: ReadonlyArray<string>): string => parts.join("/").replace(/\/+/g, "/")

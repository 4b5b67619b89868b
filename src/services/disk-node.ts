// The Disk port on Node's fs (promise API, so fsync never blocks the event loop).
import * as fs from "node:fs"
import { Effect, Layer } from "effect"
import { Disk, DiskError, type DiskFile, type DiskService } from "./disk.js"

/**
 * Node's message without the file names it carries ("ENOSPC: no space left on device,
 * write", not "..., open '/var/lib/...'"): those stay in DiskError.path, for the log.
 */
export const withoutPaths = (e: unknown): string => {
  let message = e instanceof Error ? e.message : String(e)
  const x = e as NodeJS.ErrnoException & { dest?: string }
  for (const p of [x?.path, x?.dest]) {
    if (typeof p === "string" && p !== "") message = message.split(` -> '${p}'`).join("").split(` '${p}'`).join("").split(p).join("<file>")
  }
  return message
}

const toDiskError = (path: string) => (e: unknown): DiskError => {
  const code = (e as NodeJS.ErrnoException)?.code
  const message = withoutPaths(e)
  const reason = code === "ENOENT" ? "NotFound" : code === "EEXIST" ? "Exists" : code === "ENOSPC" || code === "EDQUOT" ? "NoSpace" : "Io"
  return new DiskError({ reason, path, message })
}

const io = <A>(path: string, f: () => Promise<A>): Effect.Effect<A, DiskError> =>
  Effect.tryPromise({ try: f, catch: toDiskError(path) })

const wrap = (path: string, h: fs.promises.FileHandle): DiskFile => ({
  write: (data, position) =>
    io(path, async () => {
      let done = 0
      while (done < data.length) {
        const { bytesWritten } = await h.write(data, done, data.length - done, position + done)
        done += bytesWritten
      }
    }),
  read: (position, length) =>
    io(path, async () => {
      const buf = Buffer.allocUnsafe(length)
      let got = 0
      while (got < length) {
        const { bytesRead } = await h.read(buf, got, length - got, position + got)
        if (bytesRead === 0) break
        got += bytesRead
      }
      return got === length ? buf : buf.subarray(0, got)
    }),
  size: () => io(path, async () => (await h.stat()).size),
  truncate: (length) => io(path, () => h.truncate(length)),
  // fdatasync: the data and what is needed to read it back (the size), without the
  // timestamps fsync would also wait for; names are made durable by syncDir.
  sync: () => io(path, () => h.datasync()),
  close: () => io(path, () => h.close())
})

export const makeNodeDisk = (): DiskService => ({
  mkdirp: (path) => io(path, async () => void (await fs.promises.mkdir(path, { recursive: true }))),
  list: (path) => io(path, async () => (await fs.promises.readdir(path)).sort()),
  readFile: (path) => io(path, () => fs.promises.readFile(path)),
  open: (path, create) =>
    io(path, async () =>
      wrap(path, await fs.promises.open(path, create ? fs.constants.O_RDWR | fs.constants.O_CREAT : fs.constants.O_RDWR))
    ),
  rename: (from, to) => io(from, () => fs.promises.rename(from, to)),
  unlink: (path) => io(path, () => fs.promises.unlink(path)),
  removeAll: (path) => io(path, () => fs.promises.rm(path, { recursive: true, force: true })),
  syncDir: (path) =>
    io(path, async () => {
      const h = await fs.promises.open(path, "r")
      try {
        await h.sync()
      } finally {
        await h.close()
      }
    })
})

export const layerNode: Layer.Layer<Disk> = Layer.sync(Disk, makeNodeDisk)

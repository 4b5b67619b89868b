// The configuration service's front door: flags, then the file they name, then
// the embedded defaults, into the ServerOptions the server runs with. Files come
// through the `ConfigFiles` port so tests need no disk.
import { Context, Effect, Either, Layer } from "effect"
import { readFileSync } from "node:fs"
import { parseConfigFile, type ParsedConfig } from "./conf-parser.js"
import { checkOptions, decodeConfig, formatWarning, ineffectiveSettings, type ConfigWarning } from "./decode.js"
import { tlsProblems } from "./tls-check.js"
import { configError, type ConfigError } from "./errors.js"
import { parseArgs } from "./flags.js"
import type { SignalRequest } from "./signal.js"
import { bareOptions, defaultOptions, type ServerOptions } from "./options.js"
import { applyPatch, mergePatches, type OptionsPatch } from "./patch.js"

/** Reads configuration files (the main one and its includes). */
export class ConfigFiles extends Context.Tag("switchyard/ConfigFiles")<
  ConfigFiles,
  { readonly readFile: (path: string) => string | undefined }
>() {
  /** The local disk, UTF-8. */
  static readonly layerNode: Layer.Layer<ConfigFiles> = Layer.succeed(ConfigFiles, {
    readFile: (path) => {
      try {
        return readFileSync(path, "utf8")
      } catch {
        return undefined
      }
    }
  })

  /** A fixed set of files, by path. */
  static readonly layerMemory = (files: Readonly<Record<string, string>>): Layer.Layer<ConfigFiles> =>
    Layer.succeed(ConfigFiles, {
      readFile: (path) => (Object.prototype.hasOwnProperty.call(files, path) ? files[path] : undefined)
    })
}

export interface LoadInput {
  readonly configFile?: string | undefined
  /** Laid over the file (the flags). */
  readonly overrides?: OptionsPatch | undefined
  readonly env: Readonly<Record<string, string | undefined>>
  /** Warnings are errors (`-t`). */
  readonly strict?: boolean | undefined
  /**
   * Defaults under everything. Unless given: `defaultOptions` (everything on) when
   * there is neither a file nor an override, else `bareOptions` (only what is named runs).
   */
  readonly base?: ServerOptions | undefined
}

export interface Loaded {
  readonly options: ServerOptions
  /** Formatted `file:line:column: …`, nothing secret in them. */
  readonly warnings: ReadonlyArray<string>
}

const strictError = (warnings: ReadonlyArray<ConfigWarning>): ConfigError => {
  const [head, ...rest] = warnings
  const more = rest.length === 0 ? "" : `\n${rest.map(formatWarning).join("\n")}`
  const reason = head.reason === "UnknownKey" ? "UnknownKey" : "Invalid"
  return configError(reason, `${head.detail}${more}`, head.at)
}

/** A TLS block that cannot load, placed at its key (`ws` for a `ws` block) or named alone (flags). */
const tlsError = (problems: ReturnType<typeof tlsProblems>, parsed: ParsedConfig | undefined): ConfigError => {
  const at = (path: ReadonlyArray<PropertyKey>) =>
    parsed?.locate(path) ?? (path[0] === "websocket" ? parsed?.locate(["ws", ...path.slice(1)]) : undefined)
  const [head, ...rest] = problems
  const line = (p: (typeof problems)[number]) => {
    const pos = at(p.path)
    return pos === undefined ? p.message : `${pos.file}:${pos.line}:${pos.column}: ${p.message}`
  }
  return configError("Invalid", [head.message, ...rest.map(line)].join("\n"), at(head.path))
}

/** The options from an optional file, overrides and defaults. */
export const loadOptions = (input: LoadInput): Effect.Effect<Loaded, ConfigError, ConfigFiles> =>
  Effect.flatMap(ConfigFiles, (files) =>
    Effect.suspend(() => {
      let parsed: ParsedConfig | undefined
      let filePatch: OptionsPatch = {}
      let fileWarnings: ReadonlyArray<ConfigWarning> = []
      if (input.configFile !== undefined) {
        const p = parseConfigFile(input.configFile, { readFile: files.readFile, env: input.env })
        if (Either.isLeft(p)) return Effect.fail(p.left)
        parsed = p.right
        const d = decodeConfig(parsed)
        if (Either.isLeft(d)) return Effect.fail(d.left)
        filePatch = d.right.patch
        fileWarnings = d.right.warnings
      }
      const patch = mergePatches([filePatch, input.overrides ?? {}])
      if (patch.tls !== undefined && (patch.tls.certFile === undefined || patch.tls.keyFile === undefined)) {
        return Effect.fail(configError("Flag", "TLS needs a server certificate and key (--tlscert and --tlskey, or cert_file and key_file in the tls block)"))
      }
      if (patch.cluster !== undefined && patch.cluster.enabled !== true && (input.base ?? bareOptions).cluster === undefined) {
        return Effect.fail(configError("Flag", "--routes, --cluster_name, --cluster_advertise and --no_advertise need a cluster: --cluster <url> or a cluster block"))
      }
      const named = input.configFile !== undefined || Object.keys(input.overrides ?? {}).length > 0
      const base = input.base ?? (named ? bareOptions : defaultOptions)
      const checked = checkOptions(applyPatch(base, patch), parsed)
      if (Either.isLeft(checked)) return Effect.fail(checked.left)
      const tls = tlsProblems(checked.right, files.readFile)
      if (tls.length > 0) return Effect.fail(tlsError(tls, parsed))
      const warnings = [...fileWarnings, ...ineffectiveSettings(checked.right, patch, parsed)]
      if (input.strict === true && warnings.length > 0) return Effect.fail(strictError(warnings))
      return Effect.succeed({ options: checked.right, warnings: warnings.map(formatWarning) })
    })
  )

export type LoadOutcome =
  | {
      readonly kind: "run"
      readonly options: ServerOptions
      readonly warnings: ReadonlyArray<string>
      /** `-t`: the configuration checked out; print and exit without serving. */
      readonly checkOnly: boolean
      /** `--signal`: send it to a running server and exit. */
      readonly signal: SignalRequest | undefined
      /** What a reload reads again: the same file, under the same flags and environment. */
      readonly source: LoadInput
    }
  | { readonly kind: "help" }
  | { readonly kind: "version" }

/** From the command line (without the program name) and the environment to what to do. */
export const load = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<LoadOutcome, ConfigError, ConfigFiles> =>
  Effect.suspend(() => {
    const flags = parseArgs(argv)
    if (Either.isLeft(flags)) return Effect.fail(flags.left)
    const f = flags.right
    if (f.kind !== "run") return Effect.succeed(f)
    // No file and no flag at all: the embedded default, everything on. Any flag (even -D
    // or -t) means what nats-server means by it: only what is named runs. A reload
    // starts from the same base.
    const base = argv.length === 0 ? defaultOptions : bareOptions
    const source: LoadInput = { configFile: f.configFile, overrides: f.overrides, env, base }
    return Effect.map(
      loadOptions({ ...source, strict: f.checkOnly }),
      (loaded): LoadOutcome => ({ kind: "run", ...loaded, checkOnly: f.checkOnly, signal: f.signal, source })
    )
  })

// The one failure family of the configuration layer: a file that does not parse,
// an include or variable that does not resolve, a value of the wrong shape, or
// (in strict mode) a key we do not know. Messages never echo secret values.
import { Data } from "effect"

export type ConfigErrorReason =
  | "Syntax" // the file does not parse
  | "Include" // an include cannot be read, or includes loop
  | "Variable" // a $VARIABLE is not defined, or is malformed
  | "Invalid" // a value has the wrong shape, or values contradict each other
  | "UnknownKey" // strict mode (-t): an unknown key or another warning
  | "File" // the configuration file itself cannot be read
  | "Flag" // a command-line flag is unknown or its value is wrong

export interface SourcePos {
  readonly file: string
  /** 1-based. */
  readonly line: number
  /** 1-based, in UTF-16 code units. */
  readonly column: number
}

export class ConfigError extends Data.TaggedError("ConfigError")<{
  readonly reason: ConfigErrorReason
  /** What is wrong, without the location. */
  readonly detail: string
  readonly file: string | undefined
  readonly line: number | undefined
  readonly column: number | undefined
}> {
  /** `file:line:column: detail`, or just the detail when there is no location. */
  override get message(): string {
    if (this.file === undefined) return this.detail
    if (this.line === undefined) return `${this.file}: ${this.detail}`
    return `${this.file}:${this.line}:${this.column ?? 1}: ${this.detail}`
  }
}

export const configError = (
  reason: ConfigErrorReason,
  detail: string,
  at?: SourcePos | { readonly file: string; readonly line?: undefined; readonly column?: undefined }
): ConfigError =>
  new ConfigError({
    reason,
    detail,
    file: at?.file,
    line: at?.line,
    column: at?.column
  })

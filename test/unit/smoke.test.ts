import { it, expect } from "@effect/vitest"
import { Effect } from "effect"
it.effect("runs", () => Effect.sync(() => expect(1 + 1).toBe(2)))

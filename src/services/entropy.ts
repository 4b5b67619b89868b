// The Entropy port: where the server's unguessable values come from — its id, the
// nonces nkey users sign, generated consumer names, advisory ids, the reply prefixes of
// service imports, the client ids assigned to MQTT clients. Production draws them from
// the operating system's CSPRNG (Node's randomBytes); a simulation or a test provides
// bytes drawn from its seed, so that a run is determined by its seed, ids and nonces
// included. The per-message choices (queue members) use the faster seeded `random` of
// ServerEnv, not this.
import { randomBytes } from "node:crypto"
import { Context, Layer } from "effect"

export interface EntropyService {
  /** `n` fresh random bytes. */
  readonly bytes: (n: number) => Buffer
}

export class Entropy extends Context.Tag("switchyard/Entropy")<Entropy, EntropyService>() {}

/** The operating system's CSPRNG: what the server uses unless the context provides another Entropy. */
export const nodeEntropy: EntropyService = { bytes: (n) => randomBytes(n) }

export const layerNode: Layer.Layer<Entropy> = Layer.succeed(Entropy, nodeEntropy)

/**
 * Bytes drawn from a seeded uniform [0, 1) source: the same source gives the same bytes.
 * Guessable by construction: for simulations and tests only.
 */
export const seededEntropy = (random: () => number): EntropyService => ({
  bytes: (n) => {
    const b = Buffer.allocUnsafe(n)
    for (let i = 0; i < n; i++) b[i] = (random() * 256) | 0
    return b
  }
})

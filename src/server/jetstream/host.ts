// What a stream and its consumers need from the account they live in: the server,
// the principal they subscribe and answer as, the account's storage limits, and the
// subsystem's timer. The account (jetstream.ts) provides it; streams and consumers
// sit below it and never import it.
import type { ApiError } from "../../core/jetstream/errors.js"
import type { InternalPrincipal } from "../../engine/principal.js"
import type { GroupCommitService } from "../../services/group-commit.js"
import type { Server } from "../server.js"

export interface StreamHost {
  readonly server: Server
  /** The account's JetStream principal: what streams subscribe and answer as. */
  readonly principal: InternalPrincipal
  /**
   * The account's `$JS.API` principal: the API, pull requests and direct gets, never
   * announced to other servers (they reach this node as `$JS.<domain>.API`, if at all).
   */
  readonly api: InternalPrincipal
  /** The server's JetStream domain (said in PubAcks), if it has one. */
  readonly domain: string | undefined
  /** Undefined when `bytes` more of this storage type fit in the account. */
  readonly admit: (storage: "file" | "memory", bytes: number) => ApiError | undefined
  /** Whose rounds a stream's PubAcks wait for. */
  readonly groupCommit: GroupCommitService
  /** True: a PubAck waits for the fsync (`sync_interval: always`); false: for the write to the OS. */
  readonly syncAlways: boolean
  /** Ask the subsystem's timer to run by then (a consumer's deadline). */
  readonly wakeAt: (at: number) => void
  /** A push consumer starts (+1) or stops (-1) watching its deliver subject's interest. */
  readonly watchInterest: (delta: 1 | -1) => void
}

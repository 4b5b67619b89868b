// Accounts are the unit of isolation: each has its own subscription index, so a
// message published in one account can only reach subscribers of that account.
import { Sublist } from "../core/subject/sublist.js"
import type { Subscription } from "./subscription.js"

export const GLOBAL_ACCOUNT = "$G"

export class Account {
  readonly sublist = new Sublist<Subscription>()
  /** Open client connections bound to this account. */
  numConnections = 0
  inMsgs = 0
  inBytes = 0
  outMsgs = 0
  outBytes = 0
  slowConsumers = 0
  /** Told after any subscription of this account comes or goes (push consumers watch their deliver subject). */
  onInterestChange: (() => void) | undefined = undefined

  constructor(readonly name: string) {}

  subscribe(s: Subscription): void {
    this.sublist.insert(s)
    this.onInterestChange?.()
  }

  unsubscribe(s: Subscription): void {
    this.sublist.remove(s)
    this.onInterestChange?.()
  }
}

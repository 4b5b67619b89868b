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

  constructor(readonly name: string) {}
}

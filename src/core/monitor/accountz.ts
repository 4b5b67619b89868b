// /accountz (names, or one account's detail) and /accountstatz (per-account
// connection and traffic statistics; accounts without local connections only
// with `unused=true`). Accounts are listed by name.
import { Either } from "effect"
import type { AccountStatz, Accountz, ErrorBody } from "../../schema/monitor.js"
import { AccountInfo } from "../../schema/monitor.js"
import { formatTimestamp } from "./format.js"
import type { AccountSnapshot } from "./source.js"
import { sublistStats } from "./subsz.js"

const byName = (a: AccountSnapshot, b: AccountSnapshot): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

const accountInfo = (a: AccountSnapshot): typeof AccountInfo.Type => ({
  account_name: a.name,
  update_time: formatTimestamp(a.updated),
  ...(a.isSystem ? { is_system: true } : {}),
  expired: false,
  complete: true,
  jetstream_enabled: a.jetstreamEnabled,
  leafnode_connections: a.leafConnections,
  client_connections: a.clientConnections,
  subscriptions: a.sublist.subscriptions,
  ...(a.exports.length > 0
    ? {
        exports: a.exports.map((e) => ({
          subject: e.subject,
          type: e.type,
          ...(e.approvedAccounts !== undefined && e.approvedAccounts.length > 0
            ? { approved_accounts: [...e.approvedAccounts] }
            : {})
        }))
      }
    : {}),
  ...(a.imports.length > 0
    ? {
        imports: a.imports.map((i) => ({
          subject: i.subject,
          account: i.account,
          ...(i.localSubject !== undefined ? { local_subject: i.localSubject } : {}),
          type: i.type,
          invalid: i.invalid,
          share: false,
          tracking: false
        }))
      }
    : {}),
  sublist_stats: sublistStats([a.sublist])
})

export const buildAccountz = (
  serverId: string,
  now: number,
  systemAccount: string,
  accounts: ReadonlyArray<AccountSnapshot>,
  acc: string | undefined
): Either.Either<Accountz, ErrorBody> => {
  const head = {
    server_id: serverId,
    now: formatTimestamp(now),
    ...(systemAccount ? { system_account: systemAccount } : {})
  }
  if (acc === undefined) return Either.right({ ...head, accounts: [...accounts].sort(byName).map((a) => a.name) })
  const found = accounts.find((a) => a.name === acc)
  if (found === undefined) {
    return Either.left({ error: `Account ${acc.slice(0, 200)} does not exist`, parameter: "acc", value: acc.slice(0, 200) })
  }
  return Either.right({ ...head, account_detail: accountInfo(found) })
}

export const buildAccountStatz = (
  serverId: string,
  now: number,
  accounts: ReadonlyArray<AccountSnapshot>,
  o: { readonly unused: boolean; readonly acc: string | undefined }
): AccountStatz => ({
  server_id: serverId,
  now: formatTimestamp(now),
  account_statz: [...accounts]
    .filter((a) => o.acc === undefined || a.name === o.acc)
    .filter((a) => o.unused || a.clientConnections + a.leafConnections > 0)
    .sort(byName)
    .map((a) => ({
      acc: a.name,
      conns: a.clientConnections,
      leafnodes: a.leafConnections,
      total_conns: a.clientConnections + a.leafConnections,
      num_subscriptions: a.sublist.subscriptions,
      sent: { msgs: a.sent.msgs, bytes: a.sent.bytes },
      received: { msgs: a.received.msgs, bytes: a.received.bytes },
      slow_consumers: a.slowConsumers
    }))
})

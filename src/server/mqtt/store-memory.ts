// MQTT state in memory (the `MqttStore` port's `layerMemory`), for a server without
// streams or an account without them. Nothing survives a restart, so nothing is written
// for one: the live sessions hold their messages themselves (a message is not kept by
// reference), session records go nowhere, and a commit has nothing to wait for. What
// remains is the account's retained messages.
import { Layer } from "effect"
import { RetainedTree, type QoS, type SessionSnapshot } from "../../core/mqtt/index.js"
import { type LoadedMessage, type MqttAccountStore, MqttStore, type MqttStoreService, type RetainedMsg, type StoredProps } from "./store.js"

export class MemoryAccountStore implements MqttAccountStore {
  readonly durable: boolean = false
  readonly retained = new RetainedTree<RetainedMsg>()

  takeSessions(): Map<string, SessionSnapshot> {
    return new Map()
  }

  storeMessage(): undefined {
    return undefined
  }

  // No message has a reference here: there is nothing to count, read back or remove.
  routed(): void {}
  sizeOf(): number {
    return 0
  }
  loadMessages(refs: ReadonlyArray<number>): Promise<Array<LoadedMessage | undefined>> {
    return Promise.resolve(refs.map(() => undefined))
  }
  ref(): void {}
  unref(): void {}
  releaseIfUnheld(): void {}

  setRetained(topic: string, _subject: string, payload: Uint8Array, qos: QoS, props?: StoredProps): void {
    this.retained.set(topic, props === undefined ? { topic, payload, qos } : { topic, payload, qos, props })
  }

  deleteRetained(topic: string): boolean {
    return this.retained.delete(topic)
  }

  writeSession(): void {}
  writeSubscription(): void {}
  qos2State(): void {}
  deleteSession(): void {}
}

/** Every account's MQTT state in memory. */
export const makeMemoryStore = (): MqttStoreService => {
  const accounts = new Map<string, MemoryAccountStore>()
  const ready = (account: string): MemoryAccountStore => {
    let a = accounts.get(account)
    if (a === undefined) accounts.set(account, (a = new MemoryAccountStore()))
    return a
  }
  return {
    ready,
    open: (account) => Promise.resolve(ready(account)),
    storedAccounts: () => [],
    commit: (cb) => cb(true),
    hasWrites: () => false,
    hasRemovals: () => false
  }
}

export const layerMemory: Layer.Layer<MqttStore> = Layer.sync(MqttStore, makeMemoryStore)

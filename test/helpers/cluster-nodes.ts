// Switchyard nodes of a cluster as real processes (bin/switchyard.js with the cluster
// flags), on loopback: each knows its client, route and monitoring ports (read from its
// log), can be asked for a monitoring endpoint, stopped and started again on the same
// ports (a restart).
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node"
import { afterAll, beforeAll } from "vitest"
import { eventuallyAsync } from "./jetstream.js"
import { type NatsServerProcess, spawnNatsServer } from "./nats-server.js"
import { killProcess, loggedPort, type ServerProcess, startServerProcess } from "./process.js"

/** A server process of a test (Switchyard or nats-server) on loopback ports. */
export interface TestServerNode {
  readonly name: string
  readonly clientPort: number
  readonly httpPort: number
  /** Everything the current process logged. */
  log(): string
  monitor<T = any>(pathAndQuery: string): Promise<T>
  /** A nats.js client of this node (closed by stop). */
  client(opts?: Record<string, unknown>): Promise<NatsConnection>
  /** Started again with the same configuration and ports. */
  restart(): Promise<void>
  stop(): Promise<void>
}

export interface ClusterNode extends TestServerNode {
  readonly routePort: number
  /** SIGKILL: gone without a goodbye. */
  kill(): Promise<void>
  /** Sends the process a signal (SIGUSR2: lame duck mode, SIGHUP: reload, ...). */
  signal(sig: NodeJS.Signals): void
}

export interface NodeSpec {
  readonly name: string
  readonly cluster?: string
  /** Route URLs to solicit. */
  readonly routes?: ReadonlyArray<string>
  /** Fixed ports (else the OS picks them on the first start, and restarts keep them). */
  readonly routePort?: number
  readonly extra?: ReadonlyArray<string>
}

export const routeUrl = (port: number): string => `nats-route://127.0.0.1:${port}`

/** A test server's monitoring endpoints and nats.js clients (closed by `closeClients`), by its ports on loopback. */
export const nodeAccess = (ports: { readonly client: number; readonly http: number }) => {
  const clients: Array<NatsConnection> = []
  return {
    monitor: async <T = any>(pathAndQuery: string): Promise<T> => {
      const res = await fetch(`http://127.0.0.1:${ports.http}${pathAndQuery}`)
      return (await res.json()) as T
    },
    client: async (opts: Record<string, unknown> = {}): Promise<NatsConnection> => {
      const nc = await connect({ servers: `127.0.0.1:${ports.client}`, ...opts })
      clients.push(nc)
      return nc
    },
    closeClients: () => Promise.all(clients.map((c) => c.close().catch(() => {})))
  }
}

export const startNode = async (spec: NodeSpec): Promise<ClusterNode> => {
  const args = (ports: { client: number; route: number; http: number }) => [
    "-a", "127.0.0.1",
    "-p", String(ports.client),
    "-m", String(ports.http),
    "-n", spec.name,
    "--cluster", `nats://127.0.0.1:${ports.route}`,
    "--cluster_name", spec.cluster ?? "C1",
    ...(spec.routes !== undefined && spec.routes.length > 0 ? ["--routes", spec.routes.join(",")] : []),
    ...(spec.extra ?? [])
  ]
  let proc: ServerProcess = await startServerProcess(args({ client: -1, route: spec.routePort ?? -1, http: -1 }))
  const ports = {
    client: loggedPort(proc, /Listening for client connections on [^\s]+:(\d+)/),
    route: loggedPort(proc, /Listening for route connections on [^\s]+:(\d+)/),
    http: loggedPort(proc, /Starting http monitor on [^\s]+:(\d+)/)
  }
  const access = nodeAccess(ports)
  return {
    name: spec.name,
    clientPort: ports.client,
    routePort: ports.route,
    httpPort: ports.http,
    log: () => proc.log(),
    monitor: access.monitor,
    client: access.client,
    kill: () => killProcess(proc),
    signal: (sig) => void proc.child.kill(sig),
    restart: async () => {
      await killProcess(proc)
      proc = await startServerProcess(args(ports))
    },
    stop: async () => {
      await access.closeClients()
      await killProcess(proc)
    }
  }
}

// ---- a cluster per test file: useCluster() ----

/** What a cluster test's set-up asked for: a seed (a Switchyard node or a real nats-server) and Switchyard nodes naming only it. */
export interface ClusterSpec {
  /** The seed: a Switchyard node, or nats-server 2.9.10 (`server_name: NS`, cluster C1). */
  readonly seed: NodeSpec | "nats-server"
  /** The other Switchyard nodes; each is given the seed's route URL (and finds the rest by gossip). */
  readonly nodes: ReadonlyArray<NodeSpec>
}

export interface ClusterFixture {
  /** A Switchyard node by name (the seed too, when it is one). */
  node(name: string): ClusterNode
  /** The nats-server seed (the spec asked for one). */
  ns(): NatsServerProcess
  /** A nats.js client of the nats-server seed, closed after the file. */
  nsClient(): Promise<NatsConnection>
  /** Resolves once every server has a route to every other. */
  meshed(): Promise<void>
}

export const routez = (n: ClusterNode, q = "") =>
  n.monitor<{ num_routes: number; routes: Array<Record<string, any>> }>(`/routez${q}`)

/**
 * Starts the cluster in `beforeAll` (the seed, then the nodes together) and waits for the
 * full mesh; stops everything, clients first, in `afterAll`.
 */
export const useCluster = (spec: ClusterSpec): ClusterFixture => {
  const nodes = new Map<string, ClusterNode>()
  let ns: NatsServerProcess | undefined
  const conns: Array<NatsConnection> = []
  const total = () => nodes.size + (ns === undefined ? 0 : 1)
  const fixture: ClusterFixture = {
    node: (name) => {
      const n = nodes.get(name)
      if (n === undefined) throw new Error(`useCluster: no node ${name} (the cluster starts in beforeAll)`)
      return n
    },
    ns: () => {
      if (ns === undefined) throw new Error("useCluster: this cluster has no nats-server seed")
      return ns
    },
    nsClient: async () => {
      const nc = await connect({ servers: `127.0.0.1:${fixture.ns().clientPort}` })
      conns.push(nc)
      return nc
    },
    meshed: () =>
      eventuallyAsync(async () => {
        for (const n of nodes.values()) if ((await routez(n)).num_routes !== total() - 1) return false
        if (ns !== undefined && (await ns.monitor<{ num_routes: number }>("/routez")).num_routes !== total() - 1) return false
        return true
      }, "a full mesh", 30_000)
  }
  beforeAll(async () => {
    let seedRoute: number
    if (spec.seed === "nats-server") {
      ns = await spawnNatsServer("listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\nserver_name: NS\ncluster { name: C1, listen: 127.0.0.1:-1 }\n")
      seedRoute = ns.routePort!
    } else {
      const seed = await startNode(spec.seed)
      nodes.set(seed.name, seed)
      seedRoute = seed.routePort
    }
    const started = await Promise.all(spec.nodes.map((n) => startNode({ ...n, routes: [routeUrl(seedRoute), ...(n.routes ?? [])] })))
    for (const n of started) nodes.set(n.name, n)
    await fixture.meshed()
  }, 60_000)
  afterAll(async () => {
    await Promise.all(conns.map((c) => c.close().catch(() => {})))
    await Promise.all([...nodes.values()].map((n) => n.stop()))
    await ns?.stop()
  })
  return fixture
}

/** Collects what a subscription receives. */
export const collect = (nc: NatsConnection, subject: string, opts: { queue?: string } = {}): Array<Msg> => {
  const got: Array<Msg> = []
  nc.subscribe(subject, { ...opts, callback: (_e, m) => void got.push(m) })
  return got
}

/** Interest made on another server has reached the publisher's: a probe request is answered through it. */
export const interestReached = async (from: NatsConnection, subject: string): Promise<void> => {
  await eventuallyAsync(async () => {
    try {
      await from.request(subject, "probe", { timeout: 1000 })
      return true
    } catch {
      return false
    }
  }, `interest in ${subject} to reach the publisher's server`, 20_000)
}

// Switchyard nodes of a cluster as real processes (bin/switchyard.js with the cluster
// flags), on loopback: each knows its client, route and monitoring ports (read from its
// log), can be asked for a monitoring endpoint, stopped and started again on the same
// ports (a restart).
import { connect, type NatsConnection } from "@nats-io/transport-node"
import { killProcess, loggedPort, type ServerProcess, startServerProcess } from "./process.js"

export interface ClusterNode {
  readonly name: string
  readonly clientPort: number
  readonly routePort: number
  readonly httpPort: number
  /** Everything the current process logged. */
  log(): string
  monitor<T = any>(pathAndQuery: string): Promise<T>
  /** A nats.js client of this node. */
  client(opts?: Record<string, unknown>): Promise<NatsConnection>
  /** SIGKILL: gone without a goodbye. */
  kill(): Promise<void>
  /** Started again with the same flags and ports. */
  restart(): Promise<void>
  stop(): Promise<void>
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
  const clients: Array<NatsConnection> = []
  return {
    name: spec.name,
    clientPort: ports.client,
    routePort: ports.route,
    httpPort: ports.http,
    log: () => proc.log(),
    monitor: async <T = any>(pathAndQuery: string): Promise<T> => {
      const res = await fetch(`http://127.0.0.1:${ports.http}${pathAndQuery}`)
      return (await res.json()) as T
    },
    client: async (opts = {}) => {
      const nc = await connect({ servers: `127.0.0.1:${ports.client}`, ...opts })
      clients.push(nc)
      return nc
    },
    kill: () => killProcess(proc),
    restart: async () => {
      await killProcess(proc)
      proc = await startServerProcess(args(ports))
    },
    stop: async () => {
      await Promise.all(clients.map((c) => c.close().catch(() => {})))
      await killProcess(proc)
    }
  }
}

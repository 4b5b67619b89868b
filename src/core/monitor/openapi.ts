// The published descriptions of the monitoring API, derived from the endpoint
// table: one JSON Schema per JSON endpoint (schemas/<name>.json) and an OpenAPI
// 3.1 document of the whole API (schemas/openapi.json).
import { JSONSchema } from "effect"
import { ErrorBody } from "../../schema/monitor.js"
import type { Endpoint } from "./endpoints.js"

type Json = Record<string, unknown>

/** Version of the monitoring API description (not of the server). */
export const MonitorApiVersion = "1.0.0"

const schemaFile = (title: string, description: string, schema: JSONSchema.JsonSchema7Root): Json => ({
  $schema: schema.$schema,
  title,
  description,
  ...schema
})

/** filename → contents, for every JSON endpoint plus error.json and openapi.json. */
export const generateSchemaFiles = (table: ReadonlyArray<Endpoint<any>>, version: string): Record<string, string> => {
  const files: Record<string, string> = {}
  const write = (name: string, value: unknown) => {
    files[name] = JSON.stringify(value, null, 2) + "\n"
  }
  for (const e of table) {
    if (e.response === undefined) continue
    write(`${e.name}.json`, schemaFile(`${e.path} response`, e.description, JSONSchema.make(e.response)))
  }
  write("error.json", schemaFile("Error response", "Body of 4xx answers", JSONSchema.make(ErrorBody)))
  write("openapi.json", buildOpenApi(table, version))
  return files
}

const responseOf = (definitions: Record<string, JSONSchema.JsonSchema7>, schema: Parameters<typeof JSONSchema.fromAST>[0]) =>
  JSONSchema.fromAST(schema, { definitions, definitionPath: "#/components/schemas/", target: "openApi3.1" })

export const buildOpenApi = (table: ReadonlyArray<Endpoint<any>>, version: string): Json => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const paths: Record<string, unknown> = {}
  for (const e of table) {
    const query = responseOf(definitions, e.query.ast) as { properties?: Record<string, Json> }
    const parameters = Object.entries(query.properties ?? {}).map(([name, schema]) => {
      const { description, ...rest } = schema
      return { name, in: "query", required: false, ...(description ? { description } : {}), schema: rest }
    })
    const content = (schema: Json) => ({ [e.produces]: { schema } })
    const responses: Record<string, unknown> = {
      "200": {
        description: e.title,
        content: content(e.response !== undefined ? (responseOf(definitions, e.response.ast) as unknown as Json) : { type: "string" })
      }
    }
    for (const err of e.errors) {
      responses[String(err.status)] = {
        description: err.description,
        content: { "application/json": { schema: responseOf(definitions, err.schema.ast) } }
      }
    }
    for (const [i, path] of [e.path, ...e.aliases].entries()) {
      paths[path] = {
        get: {
          operationId: i === 0 ? e.name : `${e.name}_${path.slice(1)}`,
          summary: e.title,
          description: i === 0 ? e.description : `Same as ${e.path}. ${e.description}`,
          parameters,
          responses
        }
      }
    }
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Switchyard monitoring API",
      version,
      description:
        "Read-only HTTP monitoring endpoints with nats-server's JSON shapes. Every path is served under the " +
        "configured http_base_path. Responses carry Access-Control-Allow-Origin: *. There is no authentication: " +
        "bind the listener to a trusted interface, use the HTTPS port or put an authenticating proxy in front."
    },
    servers: [{ url: "http://localhost:8222" }],
    paths,
    components: { schemas: definitions }
  }
}

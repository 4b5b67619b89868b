// nats-py (pip, pinned by .ci/run) through the NATS client matrix: its asyncio client and
// JetStream API, in test/clients/python/nats_client.py.
import { fileURLToPath } from "node:url"
import { INSTALL, pipVersion, requireInstalled, runCase } from "../run.js"
import { describeNatsMatrix } from "../nats-matrix.js"

const script = fileURLToPath(new URL("nats_client.py", import.meta.url))
const VERSION = "2.15.0"

describeNatsMatrix({
  name: `nats-py ${VERSION} (Python)`,
  connName: "matrix-python",
  lang: "python3",
  prepare: async () => {
    requireInstalled(`nats-py ${VERSION}`, () => pipVersion("nats-py") === VERSION, INSTALL.python)
  },
  run: (c, url, args, opts) => runCase(["python3", script], c, url, args, opts),
  errors: {
    // nats-py reports a refused CONNECT as its base nats.errors.Error ("nats: 'Authorization
    // Violation'") against nats-server too: it looks for the text in lower case only.
    authorization: "Error",
    noResponders: "NoRespondersError",
    maxPayload: "MaxPayloadError",
    keyExists: "KeyWrongLastSequenceError",
    keyNotFound: "KeyNotFoundError"
  },
  objectStore: true
})

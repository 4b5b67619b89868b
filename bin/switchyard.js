#!/usr/bin/env node
// The `switchyard` command: the bundled server (built by `npm install` via `prepare`, or
// `npm run build`), so starting it never compiles anything.
import "../dist/switchyard/main.js"

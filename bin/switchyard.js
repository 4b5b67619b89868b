#!/usr/bin/env node
// The `switchyard` command: the compiled entry point (built by `npm install` via `prepare`).
import "../dist/src/main.js"

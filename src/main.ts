// Entry point: composes the layers and launches the server.
export {}

// The server's version, reported in INFO, /varz and --version. A unit test keeps it equal to package.json's.
export const VERSION = "0.1.0"
export const SERVER_PRODUCT = "switchyard"

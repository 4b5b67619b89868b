{
  description = "Switchyard: a message server on Effect speaking NATS, JetStream and MQTT 3.1.1";

  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";
    flake-utils.url = "github:numtide/flake-utils";
  };

  outputs = { self, nixpkgs, flake-utils }:
    flake-utils.lib.eachDefaultSystem (system:
      let
        pkgs = import nixpkgs { inherit system; };
        nodejs = pkgs.nodejs_22;
      in
      {
        # `nix develop`: Node and the peers the benchmarks compare against.
        devShells.default = pkgs.mkShell {
          packages = [
            nodejs
            pkgs.nats-server
            pkgs.natscli
            pkgs.mosquitto
            pkgs.git
          ];
        };

        # `nix build`: the server, with a `switchyard` command.
        packages.default = pkgs.buildNpmPackage {
          pname = "switchyard";
          version = "0.1.0";
          src = ./.;
          inherit nodejs;
          # Nix needs the hash of the npm dependency set. After changing package-lock.json,
          # build once: Nix refuses and prints the hash to put here.
          npmDepsHash = pkgs.lib.fakeHash;
          npmBuildScript = "build";
          # Tests open sockets and need the dev dependencies; run them with `npm test`.
          doCheck = false;
          meta = {
            description = "Message server: NATS client protocol, JetStream-compatible streams, MQTT 3.1.1";
            mainProgram = "switchyard";
          };
        };

        apps.default = flake-utils.lib.mkApp { drv = self.packages.${system}.default; };
      });
}

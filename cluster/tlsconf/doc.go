// Package tlsconf loads a component's TLS identity (a CA bundle, its
// certificate and key, PEM files) and makes the mutual-TLS configurations
// every xps connection uses when TLS is on: the AMS shards' and serve's
// gRPC servers, the AMS client, etcd's clients and the embedded etcd.
//
// # Role convention
//
// A certificate names its holder's role in its Subject: the
// OrganizationalUnit is one of RoleScheduler ("scheduler"), RoleAMS
// ("ams"), RoleWorker ("worker"), RoleServe ("serve"), RoleEtcd ("etcd")
// or RoleAdmin ("admin"), and the CommonName is the same word, which etcd
// takes as the user name of a client authenticated by its certificate
// (etcd's client-cert-auth). One certificate serves one role, server and
// client alike (its extended key usages are serverAuth and clientAuth);
// deploy/tls/gen-dev-certs.sh makes a development set.
//
// # Invariants
//
//  1. A server Config (Config.Server) requires a client certificate and
//     verifies it against the CA bundle; TLS 1.3 is the minimum.
//  2. A client Config (Config.Client) verifies the server against the CA
//     bundle and presents the component's certificate; TLS 1.3 minimum.
//  3. A peer's role (PeerRole) is read only from a certificate chain the
//     handshake verified, never from an unverified one.
//  4. A nil *Config is "TLS off": Server, Client and PeerClient return
//     nil, and every consumer then speaks plaintext as before.
//  5. PeerClient verifies the server's chain itself (for server use, on
//     every handshake) before it checks the identity: skipping Go's check
//     of the name dialled never skips the chain.
//
// Usage:
//
//	c, err := tlsconf.Load(tlsconf.Files{CA: "ca.crt", Cert: "tls.crt", Key: "tls.key"})
//	srv := grpc.NewServer(tlsconf.ServerOptions(c)...)
//	role, err := tlsconf.PeerRole(state) // in a handler: who calls
//
// # Files
//
//   - tlsconf.go: Files (the CA, certificate and key paths) with Validate, Load into a Config, its Server, Client and PeerClient (a worker's share, verified by identity) tls.Configs, RoleOf, PeerRole, PeerWorker and CallerState, and the gRPC options.
package tlsconf

// Package archtest enforces the layering of the module's packages: its
// test reads the table of ARCHITECTURE.md (layer, package, one sentence),
// parses the imports of every non-test Go file of the module, and fails
//
//  1. when a package of the module is not in the table, or the table lists
//     one that does not exist;
//  2. when a package imports one on a higher layer;
//  3. when one of the dependency rules of DESIGN.md that layers do not
//     express is broken (listed at the end of ARCHITECTURE.md): the AMS
//     packages import no worker-side package, the client does not reach the
//     shard, the AMS binary does not link the reader, snapshot does not import ams, densenet imports neither the
//     module nor RPC or etcd, and nothing imports a cmd/ package.
//
// The package holds no code: it is only its test.
package archtest

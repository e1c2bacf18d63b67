// Package archtest enforces the layering of the module's packages: its
// test reads the table of ARCHITECTURE.md (layer, package, one sentence),
// parses the imports of every non-test Go file of the module, and fails
//
//  1. when a package of the module is not in the table, or the table lists
//     one that does not exist;
//  2. when a package imports one on a higher layer;
//  3. when one of the dependency rules of DESIGN.md that layers do not express
//     is broken (listed at the end of ARCHITECTURE.md): the AMS packages
//     import no worker-side package, the client does not reach the shard, the
//     AMS binary does not link the reader, snapshot and sparsenet do not import ams,
//     densenet imports neither the module nor RPC or etcd, filters imports
//     only model/hashmix of the module and nothing of RPC, etcd or files,
//     and nothing imports a cmd/ package but a command its own library
//     (cmd/X/internal/...); the prediction server (serve, cmd/serve) links
//     neither job, job/ctrtrain, job/xctrain, etcd nor kafka-go, and
//     the model floor (model/...) imports nothing under internal/ and reaches
//     neither a trainer, job nor package xps (TestServeAndModelRules).
//
// Its size test (funclen_test.go) parses every hand-written .go file of the
// module, tests included (generated files, testdata and nested modules are
// skipped), and fails
//
//  4. when a function is longer than 80 lines, from its func line to its
//     closing brace, unless funcExempt lists it with a reason (GEMM
//     micro-kernels);
//  5. when the non-test files of a command's main package (cmd/X) total
//     150 lines or more: mains parse flags, wire and handle signals (a
//     tool's library used by its one command lives beneath it, in
//     cmd/X/internal/, and is no main);
//  6. when an entry of funcExempt, or of the temporary lists of what is
//     being split now (funcSplitting, cmdSplitting), no longer exceeds its
//     limit or is gone, so that the lists only shrink.
//
// Its wing tests (wings_test.go) keep the house sorted into its wings
// (internal/, tests/, cmd/ and the public packages) and fail
//
//  7. when a public package (under neither internal/, cmd/ nor tests/)
//     imports a package of internal/: a public package is built on public
//     ones only, so that a program outside the module can do whatever
//     one of the module's public packages does;
//  8. when a non-test file outside tests/ imports the testing wing, but
//     for the test servers' own commands (cmd/hdfsd, cmd/kafkad:
//     testsImporters);
//  9. when the non-generated Go lines under the top-level internal/ are
//     more than 25% of the house's (every .go file but *.pb.go and those
//     marked "Code generated ... DO NOT EDIT.", nested modules and
//     testdata included); TestInternalShare prints the figure.
//
// Its sleep test (sleep_test.go) fails
//
//  10. when a test function (or a helper of tests/testutil) calls time.Sleep
//     and sleepAllowed does not list it with its reason (poll, pace,
//     model...), or lists one that no longer does.
//
// Its file-list test (docfiles_test.go) fails
//
//  11. when a package but a command's main has no doc.go, or its package
//     doc has no "# Files" section naming exactly the package's
//     non-test, non-generated .go files but doc.go (a package that is only
//     its tests names its _test.go files; one whose code is all generated
//     has nothing to list), unless the temporary docFilesPending lists it;
//     an entry of docFilesPending whose package passes, or is gone, fails
//     too, so that the list only shrinks.
//
// The package holds no code: it is only its tests.
//
// # Files
//
//   - archtest_test.go: the layer table, the import rules, the rules of the prediction server and the model floor (1-3).
//   - funclen_test.go: the sizes of functions and mains (4-6).
//   - wings_test.go: the wings and internal/'s share (7-9).
//   - sleep_test.go: no time.Sleep in tests but those sleepAllowed lists (10).
//   - docfiles_test.go: every package's doc.go and its # Files section (11).
package archtest

// Package tlstest makes certificate authorities and role certificates in
// Go for tests (no openssl): a CA writes its certificate and each
// certificate it issues as PEM files in the test's temporary directory,
// named by tlsconf.Files. Certificates follow the role convention of
// package tlsconf (Subject OU and CN = the role) and are valid for
// localhost and 127.0.0.1. It is imported by _test.go files only
// (tests/archtest holds every package outside tests/ to that).
//
// # Files
//
//   - tlstest.go: CA: NewCA, Issue and IssueSubject (a certificate and key as PEM files), Config (a role's tlsconf.Config).
package tlstest

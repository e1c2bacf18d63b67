package hdfstest

import (
	"errors"
	"fmt"
	"net"
)

// Options configures a Server. The zero value is usable: EnsureDefaults
// fills every zero field.
type Options struct {
	// Addr is the namenode's listen address (the address clients are given).
	// The default value is "127.0.0.1:0" (a free port).
	Addr string

	// DatanodeAddr is the datanode's data-transfer listen address. The
	// namenode advertises its host (127.0.0.1 when the host is unspecified,
	// e.g. "0.0.0.0") and actual port in every block location. The default
	// value is "127.0.0.1:0".
	DatanodeAddr string

	// DatanodeHostname is the hostName advertised for the datanode; clients
	// dial it instead of the IP when they set UseDatanodeHostname. The
	// default value is "localhost".
	DatanodeHostname string

	// BlockSize is the block size getServerDefaults advertises, which the Go
	// client uses for files it creates with Create. It must be a positive
	// multiple of 512 (the bytes per checksum). The default value is 1 MiB.
	BlockSize int64

	// Replication is the replication factor getServerDefaults advertises.
	// There is only one datanode whatever it says. The default value is 1.
	Replication int

	// ListingLimit is the most entries one getListing reply holds (Hadoop's
	// dfs.ls.limit); clients page through larger directories with
	// startAfter. The default value is 1000.
	ListingLimit int

	// Superuser and Supergroup own the root directory. The defaults are
	// "hdfs" and "supergroup".
	Superuser  string
	Supergroup string

	// Logf receives diagnostics (a connection that failed, a client that
	// sent a bad checksum). The default discards them; tests may pass
	// t.Logf, provided the Server is closed before the test returns.
	Logf func(format string, args ...any)
}

// DefaultBlockSize is the default of Options.BlockSize.
const DefaultBlockSize = 1 << 20

// EnsureDefaults fills zero fields with their defaults and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.DatanodeAddr == "" {
		o.DatanodeAddr = "127.0.0.1:0"
	}
	if o.DatanodeHostname == "" {
		o.DatanodeHostname = "localhost"
	}
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.Replication == 0 {
		o.Replication = 1
	}
	if o.ListingLimit == 0 {
		o.ListingLimit = 1000
	}
	if o.Superuser == "" {
		o.Superuser = "hdfs"
	}
	if o.Supergroup == "" {
		o.Supergroup = "supergroup"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return o
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	for _, a := range []struct{ name, addr string }{{"Addr", o.Addr}, {"DatanodeAddr", o.DatanodeAddr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			errs = append(errs, fmt.Errorf("hdfstest: %s %q: %w", a.name, a.addr, err))
		}
	}
	if o.BlockSize <= 0 || o.BlockSize%bytesPerChecksum != 0 {
		errs = append(errs, fmt.Errorf("hdfstest: BlockSize %d is not a positive multiple of %d", o.BlockSize, bytesPerChecksum))
	}
	if o.Replication < 1 || o.Replication > 512 {
		errs = append(errs, fmt.Errorf("hdfstest: Replication %d is not in [1, 512]", o.Replication))
	}
	if o.ListingLimit < 1 {
		errs = append(errs, fmt.Errorf("hdfstest: ListingLimit %d is not positive", o.ListingLimit))
	}
	return errors.Join(errs...)
}

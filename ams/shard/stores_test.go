package shard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/ams/amspb"
	"github.com/xdlgo/xps/snapshot/hdfsconn"
	"github.com/xdlgo/xps/tests/hdfstest"
)

// storeCase is a location checked against the roots of TestStoreRoots:
// want is the location to open, or "" when it must be refused with err.
type storeCase struct {
	name, loc, want string
	err             error
}

// TestStoreRoots checks storeRoots.allowed on directories (cleaned, made
// absolute, links resolved) and HDFS URIs: a root and what lies under it
// are allowed, everything else refused with ams.ErrStoreNotAllowed (or
// ams.ErrBadRequest when malformed), the message naming the location
// and the roots.
func TestStoreRoots(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"data/snap/in", "outside", "real"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Links inside the root: one out of it, one within it; and a root
	// that is itself a link.
	for link, target := range map[string]string{"data/snap/out": "../../outside", "data/snap/alias": "in", "linkroot": "real"} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(base)
	snap := filepath.Join(base, "data", "snap")
	roots, err := parseStoreRoots([]string{"data/snap", base + "/linkroot/", "hdfs://nn.example:8020/snap/"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []storeCase{
		{name: "root", loc: snap, want: snap},
		{name: "root with a trailing slash", loc: snap + "/", want: snap},
		{name: "child", loc: snap + "/job-1", want: snap + "/job-1"},
		{name: "existing child", loc: snap + "/in", want: snap + "/in"},
		{name: "dot-dot staying inside", loc: snap + "/a/../b", want: snap + "/b"},
		{name: "dot-dot escape", loc: snap + "/../../outside", err: ams.ErrStoreNotAllowed},
		{name: "dot-dot escape to etc", loc: snap + "/../../../../../../../../../etc/xps", err: ams.ErrStoreNotAllowed},
		{name: "dot-dot to a sibling", loc: snap + "/../snap2", err: ams.ErrStoreNotAllowed},
		{name: "sibling sharing the prefix", loc: snap + "2", err: ams.ErrStoreNotAllowed},
		{name: "sibling child sharing the prefix", loc: snap + "2/job", err: ams.ErrStoreNotAllowed},
		{name: "parent", loc: filepath.Dir(snap), err: ams.ErrStoreNotAllowed},
		{name: "absolute elsewhere", loc: "/etc/xps", err: ams.ErrStoreNotAllowed},
		{name: "relative child", loc: "data/snap/job", want: snap + "/job"},
		{name: "relative dot", loc: "./data/./snap", want: snap},
		{name: "relative escape", loc: "../x", err: ams.ErrStoreNotAllowed},
		{name: "relative dot-dot escape", loc: "data/snap/../../x", err: ams.ErrStoreNotAllowed},
		{name: "link out of the root", loc: snap + "/out/x", err: ams.ErrStoreNotAllowed},
		{name: "link out of the root itself", loc: snap + "/out", err: ams.ErrStoreNotAllowed},
		{name: "link within the root", loc: snap + "/alias/x", want: snap + "/in/x"},
		{name: "root that is a link", loc: base + "/linkroot/x", want: base + "/real/x"},
		{name: "the link's target", loc: base + "/real", want: base + "/real"},
		{name: "hdfs root", loc: "hdfs://nn.example:8020/snap", want: "hdfs://nn.example:8020/snap"},
		{name: "hdfs child", loc: "hdfs://nn.example:8020/snap/job/", want: "hdfs://nn.example:8020/snap/job"},
		{name: "hdfs default port", loc: "hdfs://NN.example/snap/a", want: "hdfs://NN.example:8020/snap/a"},
		{name: "hdfs dot-dot inside", loc: "hdfs://nn.example:8020/snap/a/../b", want: "hdfs://nn.example:8020/snap/b"},
		{name: "hdfs foreign host", loc: "hdfs://evil.example:8020/snap", err: ams.ErrStoreNotAllowed},
		{name: "hdfs foreign port", loc: "hdfs://nn.example:9000/snap", err: ams.ErrStoreNotAllowed},
		{name: "hdfs dot-dot escape", loc: "hdfs://nn.example:8020/snap/../etc", err: ams.ErrStoreNotAllowed},
		{name: "hdfs sibling sharing the prefix", loc: "hdfs://nn.example:8020/snap2", err: ams.ErrStoreNotAllowed},
		{name: "hdfs namenode root", loc: "hdfs://nn.example:8020/", err: ams.ErrStoreNotAllowed},
		{name: "hdfs path as a directory", loc: "/snap", err: ams.ErrStoreNotAllowed},
		{name: "directory root's path on hdfs", loc: "hdfs://nn.example:8020" + snap, err: ams.ErrStoreNotAllowed},
		{name: "malformed hdfs", loc: "hdfs:///snap", err: ams.ErrBadRequest},
		{name: "empty", loc: "", err: ams.ErrBadRequest},
	}
	for _, c := range cases {
		checkStoreCase(t, roots, c)
	}
	// No roots: every location is refused, with the way out named.
	none, err := parseStoreRoots(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{snap, "hdfs://nn.example:8020/snap", "/"} {
		_, err := none.allowed(loc)
		if !errors.Is(err, ams.ErrStoreNotAllowed) || !strings.Contains(err.Error(), "-store") || !strings.Contains(err.Error(), loc) {
			t.Errorf("no roots: %q: %v, want ams.ErrStoreNotAllowed naming it and -store", loc, err)
		}
	}
}

func checkStoreCase(t *testing.T, roots storeRoots, c storeCase) {
	t.Helper()
	got, err := roots.allowed(c.loc)
	switch {
	case c.err == nil && (err != nil || got != c.want):
		t.Errorf("%s: %q: %q, %v; want %q", c.name, c.loc, got, err, c.want)
	case c.err != nil && !errors.Is(err, c.err):
		t.Errorf("%s: %q: %q, %v; want %v", c.name, c.loc, got, err, c.err)
	case errors.Is(c.err, ams.ErrStoreNotAllowed) &&
		(!strings.Contains(err.Error(), c.loc) || !strings.Contains(err.Error(), "hdfs://nn.example:8020/snap")):
		t.Errorf("%s: %q: the error %q does not name the location and the roots", c.name, c.loc, err)
	}
}

func TestOptionsValidateStores(t *testing.T) {
	for _, stores := range [][]string{{""}, {"hdfs://"}, {"/ok", "hdfs://nn:0/x"}} {
		if err := (Options{Stores: stores}).Validate(); !errors.Is(err, ams.ErrBadSpec) {
			t.Errorf("Validate of stores %q = %v, want ams.ErrBadSpec", stores, err)
		}
	}
	if err := (Options{Stores: []string{"/data", "rel", "hdfs://nn:9000/snap"}}).Validate(); err != nil {
		t.Errorf("Validate of good stores: %v", err)
	}
}

// TestStoreRPCsRefuseOtherLocations calls WriteSnapshot, Restore and
// WriteExport on a real gRPC server with locations outside the shard's
// store roots (a directory and an HDFS store): a ../ escape and a
// foreign namenode fail with ams.ErrStoreNotAllowed (PERMISSION_DENIED
// over the wire) and create nothing, and a refused restore leaves the
// version as it was. Locations under the roots work.
func TestStoreRPCsRefuseOtherLocations(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "stores", "allowed")
	srv, err := hdfstest.Start(hdfstest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hroot := "hdfs://" + srv.NamenodeAddr() + "/stores/allowed"
	s := New(Options{ID: "stores", Stripes: 1, Stores: []string{root, hroot}})
	t.Cleanup(func() { s.Close() })
	stub := serveRaw(t, s)
	refused := map[string]string{ // location: what it would have created
		root + "/../escape": filepath.Join(base, "stores", "escape"),
		root + "/../../../" + filepath.Base(base) + "/x": filepath.Join(base, "x"),
		root + "2":                          root + "2",
		"hdfs://127.0.0.1:1/stores/allowed": "",
		hroot + "/../../escape":             "hdfs:/escape",
		hroot + "2":                         "hdfs:/stores/allowed2",
	}
	for loc, created := range refused {
		for rpc, err := range callStoreRPCs(stub, loc) {
			if !errors.Is(amspb.FromStatus(err), ams.ErrStoreNotAllowed) || status.Code(err) != codes.PermissionDenied {
				t.Errorf("%s to %q: %v (code %v), want ams.ErrStoreNotAllowed, PermissionDenied", rpc, loc, err, status.Code(err))
			}
		}
		checkNotCreated(t, srv, created)
	}
	if v := s.Version(); v != ams.DefaultVersion {
		t.Errorf("version %d after refused restores, want %d", v, ams.DefaultVersion)
	}
	for _, loc := range []string{root + "/job", hroot + "/job"} {
		if _, err := stub.WriteSnapshot(context.Background(), &amspb.WriteSnapshotRequest{ClusterVersion: 1, Store: loc, Seq: 1}); err != nil {
			t.Errorf("WriteSnapshot to %q under a root: %v", loc, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "job")); err != nil {
		t.Errorf("the allowed snapshot store: %v", err)
	}
}

// callStoreRPCs calls every RPC that names a store with location loc and
// returns their errors by name.
func callStoreRPCs(stub amspb.AMSClient, loc string) map[string]error {
	ctx := context.Background()
	m, err := ams.NewShardMap(2, 8, []string{"stores"}, []string{"x"})
	if err != nil {
		panic(err)
	}
	b, err := m.Marshal()
	if err != nil {
		panic(err)
	}
	errs := map[string]error{}
	_, errs["WriteSnapshot"] = stub.WriteSnapshot(ctx, &amspb.WriteSnapshotRequest{ClusterVersion: 1, Store: loc, Seq: 1})
	_, errs["WriteExport"] = stub.WriteExport(ctx, &amspb.WriteExportRequest{ClusterVersion: 1, Store: loc, Seq: 1})
	_, errs["Restore"] = stub.Restore(ctx, &amspb.RestoreRequest{ClusterVersion: 2, Store: loc, Seq: 1, ShardMap: b})
	return errs
}

// checkNotCreated fails if path exists: a directory, or with prefix
// "hdfs:" a path on srv ("": nothing to check).
func checkNotCreated(t *testing.T, srv *hdfstest.Server, path string) {
	t.Helper()
	p, ok := strings.CutPrefix(path, "hdfs:")
	if path == "" {
		return
	}
	var err error
	if ok {
		c, _, derr := hdfsconn.Dial(srv.NamenodeAddr(), "test")
		if derr != nil {
			t.Fatal(derr)
		}
		_, err = c.Stat(p)
		c.Close()
	} else {
		_, err = os.Stat(p)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after refused requests (stat: %v)", path, err)
	}
}

package hdfstest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	_ "github.com/xdlgo/xps/tests/hdfstest/hdfspb"
)

// TestProtoRegistrations checks that this binary, which links both the
// client's generated Hadoop protos and ours, has both sets registered under
// different file paths and full names.
func TestProtoRegistrations(t *testing.T) {
	for _, p := range []string{
		"hdfs.proto", "datatransfer.proto", "RpcHeader.proto", "ClientNamenodeProtocol.proto", // the client's
		"xpshdfstest/hdfs.proto", "xpshdfstest/datatransfer.proto", "xpshdfstest/RpcHeader.proto",
		"xpshdfstest/ClientNamenodeProtocol.proto", // ours
	} {
		if _, err := protoregistry.GlobalFiles.FindFileByPath(p); err != nil {
			t.Errorf("file %s: %v", p, err)
		}
	}
	for _, n := range []protoreflect.FullName{
		"hadoop.hdfs.HdfsFileStatusProto", "hadoop.common.RpcResponseHeaderProto",
		"xps.hdfstest.hdfs.HdfsFileStatusProto", "xps.hdfstest.common.RpcResponseHeaderProto",
	} {
		if _, err := protoregistry.GlobalFiles.FindDescriptorByName(n); err != nil {
			t.Errorf("descriptor %s: %v", n, err)
		}
	}
}

// TestNoRegistrationConflictWarning re-runs this test binary with
// registration conflicts downgraded from a panic to a warning and checks
// that it prints none.
func TestNoRegistrationConflictWarning(t *testing.T) {
	if os.Getenv("HDFSTEST_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GOLANG_PROTOBUF_REGISTRATION_CONFLICT=warn", "HDFSTEST_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("test binary: %v\n%s", err, out)
	}
	if s := string(out); strings.Contains(s, "conflict") || strings.Contains(s, "WARNING") {
		t.Errorf("registration warning:\n%s", s)
	}
}

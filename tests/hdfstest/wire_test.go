package hdfstest

// Protocol-level tests with hand-rolled clients, for behaviour the Go client
// never exercises.

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdlgo/xps/tests/hdfstest/hdfspb"
)

func startTestServer(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.Logf = t.Logf
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c
}

// expectClosed checks that the server hangs up on c.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("reading until the server hangs up: %v", err)
	}
}

// rawNN is a minimal Hadoop RPC client.
type rawNN struct {
	t      *testing.T
	c      net.Conn
	r      *bufio.Reader
	callID int32
}

var testClientID = []byte("0123456789abcdef")

func dialNN(t *testing.T, s *Server, user string) *rawNN {
	t.Helper()
	c := dial(t, s.NamenodeAddr())
	frame, err := encodeRPCFrame(
		&hdfspb.RpcRequestHeaderProto{
			RpcKind: hdfspb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), RpcOp: hdfspb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
			CallId: proto.Int32(connectionContextCallID), ClientId: testClientID,
		},
		&hdfspb.IpcConnectionContextProto{
			UserInfo: &hdfspb.UserInformationProto{EffectiveUser: proto.String(user)},
			Protocol: proto.String(clientProtocolName),
		})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(append([]byte{'h', 'r', 'p', 'c', rpcVersion, rpcServiceClass, rpcAuthNone}, frame...)); err != nil {
		t.Fatal(err)
	}
	return &rawNN{t: t, c: c, r: bufio.NewReader(c)}
}

func (n *rawNN) send(callID int32, protocol, method string, req proto.Message) {
	n.t.Helper()
	frame, err := encodeRPCFrame(
		&hdfspb.RpcRequestHeaderProto{
			RpcKind: hdfspb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), RpcOp: hdfspb.RpcRequestHeaderProto_RPC_FINAL_PACKET.Enum(),
			CallId: proto.Int32(callID), ClientId: testClientID,
		},
		&hdfspb.RequestHeaderProto{
			MethodName: proto.String(method), DeclaringClassProtocolName: proto.String(protocol),
			ClientProtocolVersion: proto.Uint64(1),
		},
		req)
	if err != nil {
		n.t.Fatal(err)
	}
	if _, err := n.c.Write(frame); err != nil {
		n.t.Fatal(err)
	}
}

// callProto sends a request and returns the response header; resp is filled
// on success.
func (n *rawNN) callProto(protocol, method string, req, resp proto.Message) *hdfspb.RpcResponseHeaderProto {
	n.t.Helper()
	n.callID++
	n.send(n.callID, protocol, method, req)
	frame, err := readRPCFrame(n.r)
	if err != nil {
		n.t.Fatalf("%s: read response: %v", method, err)
	}
	hb, rest, err := splitDelimited(frame)
	if err != nil {
		n.t.Fatal(err)
	}
	h := &hdfspb.RpcResponseHeaderProto{}
	if err := proto.Unmarshal(hb, h); err != nil {
		n.t.Fatal(err)
	}
	if h.GetCallId() != uint32(n.callID) || !bytes.Equal(h.GetClientId(), testClientID) || h.GetServerIpcVersionNum() != rpcVersion {
		n.t.Errorf("%s: response header %v does not match call %d", method, h, n.callID)
	}
	if h.GetStatus() == hdfspb.RpcResponseHeaderProto_SUCCESS {
		body, rest, err := splitDelimited(rest)
		if err != nil || len(rest) != 0 {
			n.t.Fatalf("%s: response body: %v, %d trailing bytes", method, err, len(rest))
		}
		if err := proto.Unmarshal(body, resp); err != nil {
			n.t.Fatal(err)
		}
	} else if len(rest) != 0 {
		n.t.Errorf("%s: error response carries %d bytes after the header", method, len(rest))
	}
	return h
}

func (n *rawNN) call(method string, req, resp proto.Message) *hdfspb.RpcResponseHeaderProto {
	n.t.Helper()
	return n.callProto(clientProtocolName, method, req, resp)
}

// mustCall calls and fails the test unless the call succeeds.
func (n *rawNN) mustCall(method string, req, resp proto.Message) {
	n.t.Helper()
	if h := n.call(method, req, resp); h.GetStatus() != hdfspb.RpcResponseHeaderProto_SUCCESS {
		n.t.Fatalf("%s: %s: %s", method, h.GetExceptionClassName(), h.GetErrorMsg())
	}
}

// wantException calls and checks that the call fails with class.
func (n *rawNN) wantException(class, method string, req proto.Message) {
	n.t.Helper()
	h := n.call(method, req, nil)
	if h.GetStatus() != hdfspb.RpcResponseHeaderProto_ERROR || h.GetExceptionClassName() != class ||
		h.GetErrorDetail() != hdfspb.RpcResponseHeaderProto_ERROR_APPLICATION {
		n.t.Errorf("%s: status %v detail %v exception %q (%s), want %s",
			method, h.GetStatus(), h.GetErrorDetail(), h.GetExceptionClassName(), h.GetErrorMsg(), class)
	}
}

// createEmpty creates and completes an empty file.
func (n *rawNN) createEmpty(path string, flag uint32) {
	n.t.Helper()
	n.mustCall("create", &hdfspb.CreateRequestProto{
		Src: proto.String(path), Masked: &hdfspb.FsPermissionProto{Perm: proto.Uint32(0o644)},
		ClientName: proto.String("raw"), CreateFlag: proto.Uint32(flag), CreateParent: proto.Bool(false),
		Replication: proto.Uint32(1), BlockSize: proto.Uint64(1 << 20),
	}, &hdfspb.CreateResponseProto{})
	resp := &hdfspb.CompleteResponseProto{}
	n.mustCall("complete", &hdfspb.CompleteRequestProto{Src: proto.String(path), ClientName: proto.String("raw")}, resp)
	if !resp.GetResult() {
		n.t.Fatalf("complete %s = false", path)
	}
}

func TestRPCErrorsKeepTheConnection(t *testing.T) {
	s := startTestServer(t, Options{})
	n := dialNN(t, s, "raw")

	h := n.call("append", &hdfspb.AppendRequestProto{Src: proto.String("/x"), ClientName: proto.String("raw")}, nil)
	if h.GetStatus() != hdfspb.RpcResponseHeaderProto_ERROR || h.GetErrorDetail() != hdfspb.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD ||
		h.GetExceptionClassName() != excNoSuchMethod {
		t.Errorf("unknown method: %v", h)
	}
	h = n.callProto("org.apache.hadoop.hdfs.protocol.ClientDatanodeProtocol", "getFileInfo",
		&hdfspb.GetFileInfoRequestProto{Src: proto.String("/")}, nil)
	if h.GetStatus() != hdfspb.RpcResponseHeaderProto_ERROR || h.GetErrorDetail() != hdfspb.RpcResponseHeaderProto_ERROR_NO_SUCH_PROTOCOL ||
		h.GetExceptionClassName() != excNoSuchProtocol {
		t.Errorf("unknown protocol: %v", h)
	}
	// A ping (a frame holding only a header with call id -4) is not answered.
	ping, err := encodeRPCFrame(&hdfspb.RpcRequestHeaderProto{
		RpcKind: hdfspb.RpcKindProto_RPC_PROTOCOL_BUFFER.Enum(), CallId: proto.Int32(pingCallID), ClientId: testClientID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.c.Write(ping); err != nil {
		t.Fatal(err)
	}
	// The connection still serves.
	resp := &hdfspb.GetFileInfoResponseProto{}
	n.mustCall("getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String("/")}, resp)
	if resp.GetFs().GetFileType() != hdfspb.HdfsFileStatusProto_IS_DIR || resp.GetFs().GetOwner() != "hdfs" {
		t.Errorf("getFileInfo(/) = %v", resp.GetFs())
	}
	resp = &hdfspb.GetFileInfoResponseProto{}
	n.mustCall("getFileInfo", &hdfspb.GetFileInfoRequestProto{Src: proto.String("/missing")}, resp)
	if resp.Fs != nil {
		t.Errorf("getFileInfo(/missing) = %v, want no status", resp.Fs)
	}
}

func TestRPCBadPreamble(t *testing.T) {
	s := startTestServer(t, Options{})
	for _, tc := range []struct {
		name     string
		preamble []byte
	}{
		{"magic", []byte("hrpx\x09\x00\x00")},
		{"version", []byte("hrpc\x08\x00\x00")},
		{"sasl", []byte("hrpc\x09\x00\xdf")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, s.NamenodeAddr())
			if _, err := c.Write(tc.preamble); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, c)
		})
	}
}

func TestGetListingPaging(t *testing.T) {
	s := startTestServer(t, Options{ListingLimit: 3})
	n := dialNN(t, s, "raw")
	n.mustCall("mkdirs", &hdfspb.MkdirsRequestProto{Src: proto.String("/d"), Masked: &hdfspb.FsPermissionProto{Perm: proto.Uint32(0o755)},
		CreateParent: proto.Bool(false)}, &hdfspb.MkdirsResponseProto{})
	for _, name := range []string{"b1", "a", "c", "b3", "b2", "d", "b4", "e"} {
		n.createEmpty("/d/"+name, createFlagCreate)
	}
	list := func(src, after string) (names []string, remaining uint32, found bool) {
		t.Helper()
		resp := &hdfspb.GetListingResponseProto{}
		n.mustCall("getListing", &hdfspb.GetListingRequestProto{Src: proto.String(src), StartAfter: []byte(after), NeedLocation: proto.Bool(false)}, resp)
		if resp.DirList == nil {
			return nil, 0, false
		}
		for _, st := range resp.GetDirList().GetPartialListing() {
			names = append(names, string(st.GetPath()))
		}
		return names, resp.GetDirList().GetRemainingEntries(), true
	}
	for _, tc := range []struct {
		src, after    string
		want          []string
		wantRemaining uint32
		wantFound     bool
	}{
		{"/d", "", []string{"a", "b1", "b2"}, 5, true},
		{"/d", "b2", []string{"b3", "b4", "c"}, 2, true},
		{"/d", "c", []string{"d", "e"}, 0, true},
		{"/d", "b25", []string{"b3", "b4", "c"}, 2, true}, // startAfter need not exist
		{"/d", "z", nil, 0, true},
		{"/d/a", "", []string{""}, 0, true}, // a file lists itself, with an empty name
		{"/missing", "", nil, 0, false},
	} {
		names, remaining, found := list(tc.src, tc.after)
		if found != tc.wantFound || remaining != tc.wantRemaining || !equalStrings(names, tc.want) {
			t.Errorf("getListing(%s, after %q) = %q, %d remaining, found %v; want %q, %d, %v",
				tc.src, tc.after, names, remaining, found, tc.want, tc.wantRemaining, tc.wantFound)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRenameAndCreateFlags(t *testing.T) {
	s := startTestServer(t, Options{})
	n := dialNN(t, s, "raw")
	n.createEmpty("/a", createFlagCreate)
	n.createEmpty("/b", createFlagCreate)

	rename := func(overwrite bool) *hdfspb.Rename2RequestProto {
		return &hdfspb.Rename2RequestProto{Src: proto.String("/a"), Dst: proto.String("/b"), OverwriteDest: proto.Bool(overwrite)}
	}
	n.wantException(excFileAlreadyExists, "rename2", rename(false))
	n.mustCall("rename2", rename(true), &hdfspb.Rename2ResponseProto{})

	create := func(flag uint32, client string) *hdfspb.CreateRequestProto {
		return &hdfspb.CreateRequestProto{
			Src: proto.String("/b"), Masked: &hdfspb.FsPermissionProto{Perm: proto.Uint32(0o600)},
			ClientName: proto.String(client), CreateFlag: proto.Uint32(flag), CreateParent: proto.Bool(false),
			Replication: proto.Uint32(1), BlockSize: proto.Uint64(1 << 20),
		}
	}
	n.wantException(excFileAlreadyExists, "create", create(createFlagCreate, "raw"))
	resp := &hdfspb.CreateResponseProto{}
	n.mustCall("create", create(createFlagCreate|createFlagOverwrite, "raw"), resp)
	if resp.GetFs().GetPermission().GetPerm() != 0o600 || resp.GetFs().GetFileId() == 0 {
		t.Errorf("create with overwrite: %v", resp.GetFs())
	}
	// The file is leased to "raw": others may neither recreate nor extend it.
	n.wantException(excAlreadyBeingCreated, "create", create(createFlagCreate|createFlagOverwrite, "other"))
	n.wantException(excLeaseExpired, "addBlock", &hdfspb.AddBlockRequestProto{Src: proto.String("/b"), ClientName: proto.String("other")})
	n.wantException(excLeaseExpired, "complete", &hdfspb.CompleteRequestProto{Src: proto.String("/b"), ClientName: proto.String("other")})
	n.wantException(excFileNotFound, "addBlock", &hdfspb.AddBlockRequestProto{Src: proto.String("/nope"), ClientName: proto.String("raw")})
	n.wantException(excFileNotFound, "getBlockLocations", &hdfspb.GetBlockLocationsRequestProto{
		Src: proto.String("/nope"), Offset: proto.Uint64(0), Length: proto.Uint64(1)})
	n.wantException(excPathIsNotEmptyDir, "delete", &hdfspb.DeleteRequestProto{Src: proto.String("/"), Recursive: proto.Bool(false)})
	del := &hdfspb.DeleteResponseProto{}
	n.mustCall("delete", &hdfspb.DeleteRequestProto{Src: proto.String("/"), Recursive: proto.Bool(true)}, del)
	if del.GetResult() {
		t.Error("delete / succeeded")
	}
}

// rawDN is a minimal DataTransferProtocol client.
type rawDN struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialDN(t *testing.T, s *Server) *rawDN {
	c := dial(t, s.DatanodeXferAddr())
	return &rawDN{t: t, c: c, r: bufio.NewReader(c)}
}

func (d *rawDN) op(code byte, m proto.Message) {
	d.t.Helper()
	b, err := appendDelimited([]byte{0, dataTransferVersion, code}, m)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.c.Write(b); err != nil {
		d.t.Fatal(err)
	}
}

func (d *rawDN) read(m proto.Message) {
	d.t.Helper()
	if err := readDelimited(d.r, m, maxOpMessage); err != nil {
		d.t.Fatalf("read %T: %v", m, err)
	}
}

func (d *rawDN) packet(seq, off int64, sums, data []byte, last bool) {
	d.t.Helper()
	b, err := appendPacket(nil, &hdfspb.PacketHeaderProto{
		OffsetInBlock: proto.Int64(off), Seqno: proto.Int64(seq),
		LastPacketInBlock: proto.Bool(last), DataLen: proto.Int32(int32(len(data))),
	}, sums, data)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.c.Write(b); err != nil {
		d.t.Fatal(err)
	}
}

func (d *rawDN) ack() *hdfspb.PipelineAckProto {
	d.t.Helper()
	a := &hdfspb.PipelineAckProto{}
	d.read(a)
	return a
}

func testBlock(s *Server, id uint64) *hdfspb.ExtendedBlockProto {
	return &hdfspb.ExtendedBlockProto{PoolId: proto.String(s.nn.poolID), BlockId: proto.Uint64(id), GenerationStamp: proto.Uint64(1001)}
}

func writeOp(s *Server, id uint64) *hdfspb.OpWriteBlockProto {
	return &hdfspb.OpWriteBlockProto{
		Header: &hdfspb.ClientOperationHeaderProto{
			BaseHeader: &hdfspb.BaseHeaderProto{Block: testBlock(s, id)}, ClientName: proto.String("raw"),
		},
		Stage:        hdfspb.OpWriteBlockProto_PIPELINE_SETUP_CREATE.Enum(),
		PipelineSize: proto.Uint32(1), MinBytesRcvd: proto.Uint64(0), MaxBytesRcvd: proto.Uint64(0),
		LatestGenerationStamp: proto.Uint64(0),
		RequestedChecksum: &hdfspb.ChecksumProto{
			Type: hdfspb.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(), BytesPerChecksum: proto.Uint32(bytesPerChecksum),
		},
	}
}

func readOp(s *Server, id uint64, off, n uint64) *hdfspb.OpReadBlockProto {
	return &hdfspb.OpReadBlockProto{
		Header: &hdfspb.ClientOperationHeaderProto{
			BaseHeader: &hdfspb.BaseHeaderProto{Block: testBlock(s, id)}, ClientName: proto.String("raw"),
		},
		Offset: proto.Uint64(off), Len: proto.Uint64(n),
	}
}

var crc32c = checksumSpec{typ: hdfspb.ChecksumTypeProto_CHECKSUM_CRC32C, bpc: bytesPerChecksum}

// TestDatanodeWriteReadRaw writes a block in packets that split a chunk,
// with a heartbeat in between, then reads an unaligned range and the block
// checksum on one connection.
func TestDatanodeWriteReadRaw(t *testing.T) {
	s := startTestServer(t, Options{})
	data := make([]byte, 2000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	w := dialDN(t, s)
	w.op(opWriteBlock, writeOp(s, 42))
	resp := &hdfspb.BlockOpResponseProto{}
	w.read(resp)
	if resp.GetStatus() != hdfspb.Status_SUCCESS {
		t.Fatalf("write response %v", resp)
	}
	// 700 bytes, then 324 to realign on a chunk boundary, then the rest.
	var seq int64
	for _, p := range [][2]int{{0, 700}, {700, 1024}, {1024, 2000}} {
		seq++
		chunk := data[p[0]:p[1]]
		w.packet(seq, int64(p[0]), crc32c.appendSums(nil, chunk), chunk, false)
		if a := w.ack(); a.GetSeqno() != seq || len(a.GetReply()) != 1 || a.GetReply()[0] != hdfspb.Status_SUCCESS {
			t.Fatalf("ack %v, want seqno %d SUCCESS", a, seq)
		}
		if seq == 1 {
			w.packet(heartbeatSeqno, 0, nil, nil, false)
			if a := w.ack(); a.GetSeqno() != heartbeatSeqno || a.GetReply()[0] != hdfspb.Status_SUCCESS {
				t.Fatalf("heartbeat ack %v", a)
			}
		}
	}
	if s.store.finalizedLen(42, 2000) {
		t.Error("replica finalized before the last packet")
	}
	w.packet(seq+1, 2000, nil, nil, true)
	if a := w.ack(); a.GetSeqno() != seq+1 || a.GetReply()[0] != hdfspb.Status_SUCCESS {
		t.Fatalf("last ack %v", a)
	}
	if !s.store.finalizedLen(42, 2000) {
		t.Error("replica not finalized after the last packet's ack")
	}
	expectClosed(t, w.c)

	r := dialDN(t, s)
	r.op(opReadBlock, readOp(s, 42, 1000, 500))
	resp = &hdfspb.BlockOpResponseProto{}
	r.read(resp)
	info := resp.GetReadOpChecksumInfo()
	if resp.GetStatus() != hdfspb.Status_SUCCESS || info.GetChunkOffset() != 512 ||
		info.GetChecksum().GetType() != hdfspb.ChecksumTypeProto_CHECKSUM_CRC32C || info.GetChecksum().GetBytesPerChecksum() != 512 {
		t.Fatalf("read response %v", resp)
	}
	hdr, sums, got, err := readPacket(r.r)
	if err != nil {
		t.Fatal(err)
	}
	// From the chunk boundary at 512 to the end of the chunk holding 1499.
	if hdr.GetOffsetInBlock() != 512 || hdr.GetLastPacketInBlock() || !bytes.Equal(got, data[512:1536]) || crc32c.verify(got, sums) != -1 {
		t.Errorf("packet %v with %d bytes, want 1024 bytes from 512", hdr, len(got))
	}
	hdr, sums, got, err = readPacket(r.r)
	if err != nil || !hdr.GetLastPacketInBlock() || len(got) != 0 || len(sums) != 0 || hdr.GetOffsetInBlock() != 1536 {
		t.Errorf("last packet %v, %d bytes, %v", hdr, len(got), err)
	}
	// Report success, then ask for the block checksum on the same connection.
	b, _ := appendDelimited(nil, &hdfspb.ClientReadStatusProto{Status: hdfspb.Status_CHECKSUM_OK.Enum()})
	if _, err := r.c.Write(b); err != nil {
		t.Fatal(err)
	}
	r.op(opBlockChecksum, &hdfspb.OpBlockChecksumProto{Header: &hdfspb.BaseHeaderProto{Block: testBlock(s, 42)}})
	resp = &hdfspb.BlockOpResponseProto{}
	r.read(resp)
	cr := resp.GetChecksumResponse()
	want := md5.Sum(crc32c.appendSums(nil, data))
	if resp.GetStatus() != hdfspb.Status_SUCCESS || cr.GetCrcPerBlock() != 4 || cr.GetBytesPerCrc() != 512 || !bytes.Equal(cr.GetBlockChecksum(), want[:]) {
		t.Errorf("checksum response %v", resp)
	}
}

func TestDatanodeBadChecksum(t *testing.T) {
	s := startTestServer(t, Options{})
	w := dialDN(t, s)
	w.op(opWriteBlock, writeOp(s, 7))
	w.read(&hdfspb.BlockOpResponseProto{})
	data := bytes.Repeat([]byte("x"), 1500)
	sums := crc32c.appendSums(nil, data)
	sums[5] ^= 1 // the second chunk's checksum
	w.packet(1, 0, sums, data, false)
	if a := w.ack(); a.GetSeqno() != 1 || a.GetReply()[0] != hdfspb.Status_ERROR_CHECKSUM {
		t.Errorf("ack %v, want ERROR_CHECKSUM", a)
	}
	expectClosed(t, w.c)
	if s.store.finalizedLen(7, 0) || s.store.usedBytes() != 0 {
		t.Error("bad packet stored")
	}
}

func TestDatanodeErrors(t *testing.T) {
	s := startTestServer(t, Options{})
	// A finalized 100-byte block 1.
	w := dialDN(t, s)
	w.op(opWriteBlock, writeOp(s, 1))
	w.read(&hdfspb.BlockOpResponseProto{})
	data := make([]byte, 100)
	w.packet(1, 0, crc32c.appendSums(nil, data), data, true)
	w.ack()

	withTargets := writeOp(s, 2)
	withTargets.Targets = []*hdfspb.DatanodeInfoProto{s.nn.datanodeInfoProto()}
	appendStage := writeOp(s, 3)
	appendStage.Stage = hdfspb.OpWriteBlockProto_PIPELINE_SETUP_APPEND.Enum()
	otherPool := readOp(s, 1, 0, 10)
	otherPool.Header.BaseHeader.Block.PoolId = proto.String("BP-other")

	for _, tc := range []struct {
		name   string
		code   byte
		op     proto.Message
		status hdfspb.Status
	}{
		{"read missing block", opReadBlock, readOp(s, 99, 0, 1), hdfspb.Status_ERROR},
		{"read past the end", opReadBlock, readOp(s, 1, 50, 51), hdfspb.Status_ERROR},
		{"read other pool", opReadBlock, otherPool, hdfspb.Status_ERROR},
		{"write existing block", opWriteBlock, writeOp(s, 1), hdfspb.Status_ERROR},
		{"write pipeline", opWriteBlock, withTargets, hdfspb.Status_ERROR},
		{"write append stage", opWriteBlock, appendStage, hdfspb.Status_ERROR_UNSUPPORTED},
		{"checksum missing block", opBlockChecksum, &hdfspb.OpBlockChecksumProto{Header: &hdfspb.BaseHeaderProto{Block: testBlock(s, 99)}}, hdfspb.Status_ERROR},
		{"unknown op", 0x59, &hdfspb.OpBlockChecksumProto{Header: &hdfspb.BaseHeaderProto{Block: testBlock(s, 1)}}, hdfspb.Status_ERROR_UNSUPPORTED},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dialDN(t, s)
			d.op(tc.code, tc.op)
			resp := &hdfspb.BlockOpResponseProto{}
			d.read(resp)
			if resp.GetStatus() != tc.status || resp.GetMessage() == "" {
				t.Errorf("response %v, want status %v and a message", resp, tc.status)
			}
			expectClosed(t, d.c)
		})
	}

	t.Run("version mismatch", func(t *testing.T) {
		d := dialDN(t, s)
		if _, err := d.c.Write([]byte{0, 27, opReadBlock}); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, d.c)
	})
}

// TestBlockOpResponseMinimumSize pins the detail that keeps the Go client
// from hanging: every BlockOpResponseProto is at least 4 bytes.
func TestBlockOpResponseMinimumSize(t *testing.T) {
	var buf bytes.Buffer
	dn := &datanode{logf: t.Logf}
	w := bufio.NewWriter(&buf)
	if err := dn.respond(w, &hdfspb.BlockOpResponseProto{Status: hdfspb.Status_SUCCESS.Enum()}); err != nil {
		t.Fatal(err)
	}
	n, k := binary.Uvarint(buf.Bytes())
	if k != 1 || n < 4 || int(n)+k != buf.Len() {
		t.Errorf("response of %d bytes (%x), want a varint and at least 4", buf.Len(), buf.Bytes())
	}
}

func TestDecodeRPCRequest(t *testing.T) {
	hdr := &hdfspb.RpcRequestHeaderProto{CallId: proto.Int32(5), ClientId: testClientID}
	mh := &hdfspb.RequestHeaderProto{MethodName: proto.String("m"), DeclaringClassProtocolName: proto.String("p"), ClientProtocolVersion: proto.Uint64(1)}
	body := &hdfspb.GetFileInfoRequestProto{Src: proto.String("/x")}
	frame, err := encodeRPCFrame(hdr, mh, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.BigEndian.Uint32(frame); int(got) != len(frame)-4 {
		t.Errorf("frame length %d, want %d", got, len(frame)-4)
	}
	read, err := readRPCFrame(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	req, err := decodeRPCRequest(read)
	if err != nil {
		t.Fatal(err)
	}
	got := &hdfspb.GetFileInfoRequestProto{}
	if err := proto.Unmarshal(req.body, got); err != nil || got.GetSrc() != "/x" || req.method.GetMethodName() != "m" || req.header.GetCallId() != 5 {
		t.Errorf("decoded %v %v %v (%v)", req.header, req.method, got, err)
	}
	for _, bad := range [][]byte{
		{0x05, 1, 2}, // truncated message
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // varint overflow
		append(append([]byte{}, read...), 0x00, 0x00),                      // trailing bytes
	} {
		if _, err := decodeRPCRequest(bad); err == nil {
			t.Errorf("decodeRPCRequest(%x) succeeded", bad)
		}
	}
	huge := []byte{0x7f, 0xff, 0xff, 0xff}
	if _, err := readRPCFrame(bytes.NewReader(huge)); !errors.Is(err, errFrame) {
		t.Errorf("readRPCFrame of a 2 GiB frame = %v", err)
	}
}

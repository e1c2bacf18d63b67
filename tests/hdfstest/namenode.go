package hdfstest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdlgo/xps/tests/hdfstest/hdfspb"
)

// Constants the namenode advertises.
const (
	bytesPerChecksum = 512
	writePacketSize  = 64 << 10
	fileBufferSize   = 4096
	capacityBytes    = 1 << 40 // reported by getFsStats
	rackLocation     = "/default-rack"
)

// datanodeID is how the namenode advertises the (single) datanode.
type datanodeID struct {
	ip, host  string
	port      uint32
	uuid      string
	storageID string
}

// rpcMethod decodes one request body and serves it.
type rpcMethod func(s *nnSession, body []byte) (proto.Message, error)

// method adapts a typed handler to an rpcMethod.
func method[R any, PR interface {
	*R
	proto.Message
}](h func(*nnSession, PR) (proto.Message, error)) rpcMethod {
	return func(s *nnSession, body []byte) (proto.Message, error) {
		req := PR(new(R))
		if err := proto.Unmarshal(body, req); err != nil {
			return nil, remoteErrorf(excRPCServer, "cannot parse %T: %v", req, err)
		}
		return h(s, req)
	}
}

// namenode serves ClientProtocol over Hadoop RPC from a namespace.
type namenode struct {
	logf        func(format string, args ...any)
	now         func() time.Time
	store       *blockStore
	dn          datanodeID
	poolID      string
	blockSize   uint64
	replication uint32
	listLimit   int
	methods     map[string]rpcMethod

	mu sync.Mutex // protects ns; held for CPU work only, never across I/O
	ns *namespace
}

func newNamenode(o *Options, store *blockStore, dn datanodeID, poolID string) *namenode {
	nn := &namenode{
		logf: o.Logf, now: time.Now, store: store, dn: dn, poolID: poolID,
		blockSize: uint64(o.BlockSize), replication: uint32(o.Replication), listLimit: o.ListingLimit,
	}
	nn.ns = newNamespace(nn.now(), o.Superuser, o.Supergroup)
	nn.methods = map[string]rpcMethod{
		"getFileInfo":            method((*nnSession).getFileInfo),
		"getListing":             method((*nnSession).getListing),
		"getBlockLocations":      method((*nnSession).getBlockLocations),
		"getServerDefaults":      method((*nnSession).getServerDefaults),
		"create":                 method((*nnSession).create),
		"addBlock":               method((*nnSession).addBlock),
		"updateBlockForPipeline": method((*nnSession).updateBlockForPipeline),
		"complete":               method((*nnSession).complete),
		"renewLease":             method((*nnSession).renewLease),
		"mkdirs":                 method((*nnSession).mkdirs),
		"delete":                 method((*nnSession).delete),
		"rename2":                method((*nnSession).rename2),
		"getFsStats":             method((*nnSession).getFsStats),
		"getContentSummary":      method((*nnSession).getContentSummary),
		"setPermission":          method((*nnSession).setPermission),
		"setOwner":               method((*nnSession).setOwner),
		"setTimes":               method((*nnSession).setTimes),
	}
	return nn
}

// nnSession is one client connection after the handshake.
type nnSession struct {
	nn   *namenode
	user string // effective user from the connection context
}

// serveConn speaks Hadoop RPC on conn until the client hangs up or sends
// something this server cannot answer. The caller closes conn.
func (nn *namenode) serveConn(conn net.Conn) {
	r := bufio.NewReader(conn)
	s, err := nn.handshake(r)
	if err != nil {
		nn.logf("hdfstest: namenode %s: handshake: %v", conn.RemoteAddr(), err)
		return
	}
	for {
		frame, err := readRPCFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				nn.logf("hdfstest: namenode %s: %v", conn.RemoteAddr(), err)
			}
			return
		}
		resp, keep, err := s.call(frame)
		if err != nil {
			nn.logf("hdfstest: namenode %s: %v", conn.RemoteAddr(), err)
		}
		if resp != nil {
			if _, err := conn.Write(resp); err != nil {
				nn.logf("hdfstest: namenode %s: write response: %v", conn.RemoteAddr(), err)
				return
			}
		}
		if !keep {
			return
		}
	}
}

// handshake reads the preamble and the connection context.
func (nn *namenode) handshake(r io.Reader) (*nnSession, error) {
	if err := readPreamble(r); err != nil {
		return nil, err
	}
	frame, err := readRPCFrame(r)
	if err != nil {
		return nil, fmt.Errorf("read connection context: %w", err)
	}
	req, err := decodeRPCRequest(frame)
	if err != nil {
		return nil, fmt.Errorf("decode connection context: %w", err)
	}
	if id := req.header.GetCallId(); id != connectionContextCallID {
		return nil, fmt.Errorf("first call has id %d, want the connection context (%d)", id, connectionContextCallID)
	}
	cc := &hdfspb.IpcConnectionContextProto{}
	if err := proto.Unmarshal(req.body, cc); err != nil {
		return nil, fmt.Errorf("unmarshal IpcConnectionContextProto: %w", err)
	}
	if p := cc.GetProtocol(); p != "" && p != clientProtocolName {
		return nil, fmt.Errorf("unknown protocol %q", p)
	}
	user := cc.GetUserInfo().GetEffectiveUser()
	if user == "" {
		return nil, errors.New("connection context names no user")
	}
	return &nnSession{nn: nn, user: user}, nil
}

// call serves one request frame and returns the response frame to send
// (nil for none) and whether to keep the connection open.
func (s *nnSession) call(frame []byte) (resp []byte, keep bool, err error) {
	req, err := decodeRPCRequest(frame)
	if err != nil {
		return nil, false, fmt.Errorf("decode request: %w", err)
	}
	h := req.header
	switch id := h.GetCallId(); {
	case id == pingCallID:
		return nil, true, nil
	case id < 0:
		return nil, false, fmt.Errorf("unexpected call id %d", id)
	}
	rh := &hdfspb.RpcResponseHeaderProto{
		CallId:              proto.Uint32(uint32(h.GetCallId())),
		ServerIpcVersionNum: proto.Uint32(rpcVersion),
		ClientId:            h.GetClientId(),
		RetryCount:          proto.Int32(h.GetRetryCount()),
	}
	fail := func(status hdfspb.RpcResponseHeaderProto_RpcStatusProto,
		code hdfspb.RpcResponseHeaderProto_RpcErrorCodeProto, class, msg string) ([]byte, error) {
		rh.Status, rh.ErrorDetail = status.Enum(), code.Enum()
		rh.ExceptionClassName, rh.ErrorMsg = proto.String(class), proto.String(msg)
		return encodeRPCFrame(rh)
	}
	name := req.method.GetMethodName()
	switch {
	case h.GetRpcKind() != hdfspb.RpcKindProto_RPC_PROTOCOL_BUFFER:
		resp, err := fail(hdfspb.RpcResponseHeaderProto_FATAL, hdfspb.RpcResponseHeaderProto_FATAL_INVALID_RPC_HEADER,
			excRPCServer, fmt.Sprintf("Unknown rpc kind %v", h.GetRpcKind()))
		return resp, false, err
	case req.method.GetDeclaringClassProtocolName() != clientProtocolName:
		resp, err := fail(hdfspb.RpcResponseHeaderProto_ERROR, hdfspb.RpcResponseHeaderProto_ERROR_NO_SUCH_PROTOCOL,
			excNoSuchProtocol, "Unknown protocol: "+req.method.GetDeclaringClassProtocolName())
		return resp, err == nil, err
	}
	m := s.nn.methods[name]
	if m == nil {
		resp, err := fail(hdfspb.RpcResponseHeaderProto_ERROR, hdfspb.RpcResponseHeaderProto_ERROR_NO_SUCH_METHOD,
			excNoSuchMethod, fmt.Sprintf("Unknown method %s called on %s protocol.", name, clientProtocolName))
		return resp, err == nil, err
	}
	body, err := m(s, req.body)
	if err == nil {
		rh.Status = hdfspb.RpcResponseHeaderProto_SUCCESS.Enum()
		if resp, err = encodeRPCFrame(rh, body); err == nil {
			return resp, true, nil
		}
		err = fmt.Errorf("%s: encode response: %w", name, err) // a bug in this server
		s.nn.logf("hdfstest: namenode: %v", err)
	}
	class, msg := exceptionOf(err)
	resp, err = fail(hdfspb.RpcResponseHeaderProto_ERROR, hdfspb.RpcResponseHeaderProto_ERROR_APPLICATION, class, msg)
	return resp, err == nil, err
}

// Conversions to protocol messages.

func (nn *namenode) fileStatusProto(st fileStatus) *hdfspb.HdfsFileStatusProto {
	ft := hdfspb.HdfsFileStatusProto_IS_FILE
	if st.dir {
		ft = hdfspb.HdfsFileStatusProto_IS_DIR
	}
	return &hdfspb.HdfsFileStatusProto{
		FileType:         ft.Enum(),
		Path:             append([]byte{}, st.name...),
		Length:           proto.Uint64(st.length),
		Permission:       &hdfspb.FsPermissionProto{Perm: proto.Uint32(st.perm)},
		Owner:            proto.String(st.owner),
		Group:            proto.String(st.group),
		ModificationTime: proto.Uint64(uint64(st.mtime)),
		AccessTime:       proto.Uint64(uint64(st.atime)),
		BlockReplication: proto.Uint32(st.replication),
		Blocksize:        proto.Uint64(st.blockSize),
		FileId:           proto.Uint64(st.id),
		ChildrenNum:      proto.Int32(int32(st.children)),
	}
}

func (nn *namenode) datanodeInfoProto() *hdfspb.DatanodeInfoProto {
	used := nn.store.usedBytes()
	return &hdfspb.DatanodeInfoProto{
		Id: &hdfspb.DatanodeIDProto{
			IpAddr:       proto.String(nn.dn.ip),
			HostName:     proto.String(nn.dn.host),
			DatanodeUuid: proto.String(nn.dn.uuid),
			XferPort:     proto.Uint32(nn.dn.port),
			InfoPort:     proto.Uint32(0),
			IpcPort:      proto.Uint32(0),
		},
		Capacity:   proto.Uint64(capacityBytes),
		DfsUsed:    proto.Uint64(used),
		Remaining:  proto.Uint64(capacityBytes - used),
		LastUpdate: proto.Uint64(uint64(nn.now().UnixMilli())),
		Location:   proto.String(rackLocation),
		AdminState: hdfspb.DatanodeInfoProto_NORMAL.Enum(),
	}
}

func (nn *namenode) extendedBlockProto(b blockInfo) *hdfspb.ExtendedBlockProto {
	return &hdfspb.ExtendedBlockProto{
		PoolId:          proto.String(nn.poolID),
		BlockId:         proto.Uint64(b.id),
		GenerationStamp: proto.Uint64(b.genStamp),
		NumBytes:        proto.Uint64(b.numBytes),
	}
}

func (nn *namenode) locatedBlockProto(lb locatedBlock) *hdfspb.LocatedBlockProto {
	return &hdfspb.LocatedBlockProto{
		B:            nn.extendedBlockProto(lb.blockInfo),
		Offset:       proto.Uint64(lb.offset),
		Locs:         []*hdfspb.DatanodeInfoProto{nn.datanodeInfoProto()},
		Corrupt:      proto.Bool(false),
		BlockToken:   emptyToken(),
		IsCached:     []bool{false},
		StorageTypes: []hdfspb.StorageTypeProto{hdfspb.StorageTypeProto_DISK},
		StorageIDs:   []string{nn.dn.storageID},
	}
}

// emptyToken is the block token of a cluster without security.
func emptyToken() *hdfspb.TokenProto {
	return &hdfspb.TokenProto{Identifier: []byte{}, Password: []byte{}, Kind: proto.String(""), Service: proto.String("")}
}

func blockFromProto(b *hdfspb.ExtendedBlockProto) *blockInfo {
	if b == nil {
		return nil
	}
	return &blockInfo{id: b.GetBlockId(), genStamp: b.GetGenerationStamp(), numBytes: b.GetNumBytes()}
}

// locked runs f with the namespace lock held.
func (nn *namenode) locked(f func(ns *namespace)) {
	nn.mu.Lock()
	defer nn.mu.Unlock()
	f(nn.ns)
}

// ClientProtocol methods.

func (s *nnSession) getFileInfo(req *hdfspb.GetFileInfoRequestProto) (proto.Message, error) {
	var (
		st  fileStatus
		ok  bool
		err error
	)
	s.nn.locked(func(ns *namespace) { st, ok, err = ns.stat(req.GetSrc()) })
	if err != nil {
		return nil, err
	}
	resp := &hdfspb.GetFileInfoResponseProto{}
	if ok {
		resp.Fs = s.nn.fileStatusProto(st)
	}
	return resp, nil
}

func (s *nnSession) getListing(req *hdfspb.GetListingRequestProto) (proto.Message, error) {
	var (
		ents      []fileStatus
		remaining int
		ok        bool
		err       error
	)
	s.nn.locked(func(ns *namespace) {
		ents, remaining, ok, err = ns.list(req.GetSrc(), string(req.GetStartAfter()), s.nn.listLimit)
	})
	if err != nil {
		return nil, err
	}
	resp := &hdfspb.GetListingResponseProto{}
	if ok {
		dl := &hdfspb.DirectoryListingProto{RemainingEntries: proto.Uint32(uint32(remaining))}
		for _, st := range ents {
			dl.PartialListing = append(dl.PartialListing, s.nn.fileStatusProto(st))
		}
		resp.DirList = dl
	}
	return resp, nil
}

func (s *nnSession) getBlockLocations(req *hdfspb.GetBlockLocationsRequestProto) (proto.Message, error) {
	var (
		fl  fileLocations
		err error
	)
	s.nn.locked(func(ns *namespace) { fl, err = ns.blockLocations(req.GetSrc(), req.GetOffset(), req.GetLength()) })
	if err != nil {
		return nil, err
	}
	lbs := &hdfspb.LocatedBlocksProto{
		FileLength:          proto.Uint64(fl.length),
		UnderConstruction:   proto.Bool(fl.underConstruction),
		IsLastBlockComplete: proto.Bool(!fl.underConstruction),
	}
	for _, b := range fl.blocks {
		lbs.Blocks = append(lbs.Blocks, s.nn.locatedBlockProto(b))
	}
	if fl.last != nil {
		lbs.LastBlock = s.nn.locatedBlockProto(*fl.last)
	}
	return &hdfspb.GetBlockLocationsResponseProto{Locations: lbs}, nil
}

func (s *nnSession) getServerDefaults(*hdfspb.GetServerDefaultsRequestProto) (proto.Message, error) {
	return &hdfspb.GetServerDefaultsResponseProto{ServerDefaults: &hdfspb.FsServerDefaultsProto{
		BlockSize:           proto.Uint64(s.nn.blockSize),
		BytesPerChecksum:    proto.Uint32(bytesPerChecksum),
		WritePacketSize:     proto.Uint32(writePacketSize),
		Replication:         proto.Uint32(s.nn.replication),
		FileBufferSize:      proto.Uint32(fileBufferSize),
		EncryptDataTransfer: proto.Bool(false),
		TrashInterval:       proto.Uint64(0),
		ChecksumType:        hdfspb.ChecksumTypeProto_CHECKSUM_CRC32C.Enum(),
	}}, nil
}

func (s *nnSession) create(req *hdfspb.CreateRequestProto) (proto.Message, error) {
	a := createArgs{
		path:         req.GetSrc(),
		perm:         req.GetMasked().GetPerm(),
		user:         s.user,
		clientName:   req.GetClientName(),
		flag:         req.GetCreateFlag(),
		createParent: req.GetCreateParent(),
		replication:  req.GetReplication(),
		blockSize:    req.GetBlockSize(),
	}
	var (
		st      fileStatus
		dropped []uint64
		err     error
	)
	s.nn.locked(func(ns *namespace) { st, dropped, err = ns.create(a, s.nn.now()) })
	s.nn.store.remove(dropped)
	if err != nil {
		return nil, err
	}
	return &hdfspb.CreateResponseProto{Fs: s.nn.fileStatusProto(st)}, nil
}

func (s *nnSession) addBlock(req *hdfspb.AddBlockRequestProto) (proto.Message, error) {
	for _, ex := range req.GetExcludeNodes() {
		if ex.GetId().GetDatanodeUuid() == s.nn.dn.uuid {
			return nil, remoteErrorf(excIO, "File %s could only be written to 0 of the 1 minReplication nodes. "+
				"There are 1 datanode(s) running and 1 node(s) are excluded in this operation.", req.GetSrc())
		}
	}
	var (
		lb  locatedBlock
		err error
	)
	s.nn.locked(func(ns *namespace) {
		lb, err = ns.addBlock(req.GetSrc(), req.GetFileId(), req.GetClientName(), blockFromProto(req.GetPrevious()))
	})
	if err != nil {
		return nil, err
	}
	return &hdfspb.AddBlockResponseProto{Block: s.nn.locatedBlockProto(lb)}, nil
}

func (s *nnSession) updateBlockForPipeline(req *hdfspb.UpdateBlockForPipelineRequestProto) (proto.Message, error) {
	var (
		lb  locatedBlock
		err error
	)
	s.nn.locked(func(ns *namespace) {
		lb, err = ns.updateBlockForPipeline(req.GetBlock().GetBlockId(), req.GetClientName())
	})
	if err != nil {
		return nil, err
	}
	return &hdfspb.UpdateBlockForPipelineResponseProto{Block: s.nn.locatedBlockProto(lb)}, nil
}

func (s *nnSession) complete(req *hdfspb.CompleteRequestProto) (proto.Message, error) {
	var (
		done    bool
		dropped []uint64
		err     error
	)
	s.nn.locked(func(ns *namespace) {
		done, dropped, err = ns.complete(req.GetSrc(), req.GetFileId(), req.GetClientName(),
			blockFromProto(req.GetLast()), s.nn.store.finalizedLen, s.nn.now())
	})
	s.nn.store.remove(dropped)
	if err != nil {
		return nil, err
	}
	return &hdfspb.CompleteResponseProto{Result: proto.Bool(done)}, nil
}

func (s *nnSession) renewLease(*hdfspb.RenewLeaseRequestProto) (proto.Message, error) {
	return &hdfspb.RenewLeaseResponseProto{}, nil // leases never expire here
}

func (s *nnSession) mkdirs(req *hdfspb.MkdirsRequestProto) (proto.Message, error) {
	var err error
	s.nn.locked(func(ns *namespace) {
		err = ns.mkdirs(req.GetSrc(), req.GetMasked().GetPerm(), s.user, req.GetCreateParent(), s.nn.now())
	})
	if err != nil {
		return nil, err
	}
	return &hdfspb.MkdirsResponseProto{Result: proto.Bool(true)}, nil
}

func (s *nnSession) delete(req *hdfspb.DeleteRequestProto) (proto.Message, error) {
	var (
		ok      bool
		dropped []uint64
		err     error
	)
	s.nn.locked(func(ns *namespace) { ok, dropped, err = ns.delete(req.GetSrc(), req.GetRecursive(), s.nn.now()) })
	s.nn.store.remove(dropped)
	if err != nil {
		return nil, err
	}
	return &hdfspb.DeleteResponseProto{Result: proto.Bool(ok)}, nil
}

func (s *nnSession) rename2(req *hdfspb.Rename2RequestProto) (proto.Message, error) {
	var (
		dropped []uint64
		err     error
	)
	s.nn.locked(func(ns *namespace) {
		dropped, err = ns.rename(req.GetSrc(), req.GetDst(), req.GetOverwriteDest(), s.nn.now())
	})
	s.nn.store.remove(dropped)
	if err != nil {
		return nil, err
	}
	return &hdfspb.Rename2ResponseProto{}, nil
}

func (s *nnSession) getFsStats(*hdfspb.GetFsStatusRequestProto) (proto.Message, error) {
	used := s.nn.store.usedBytes()
	return &hdfspb.GetFsStatsResponseProto{
		Capacity:        proto.Uint64(capacityBytes),
		Used:            proto.Uint64(used),
		Remaining:       proto.Uint64(capacityBytes - used),
		UnderReplicated: proto.Uint64(0),
		CorruptBlocks:   proto.Uint64(0),
		MissingBlocks:   proto.Uint64(0),
	}, nil
}

func (s *nnSession) getContentSummary(req *hdfspb.GetContentSummaryRequestProto) (proto.Message, error) {
	var (
		cs  contentSummary
		err error
	)
	s.nn.locked(func(ns *namespace) { cs, err = ns.contentSummary(req.GetPath()) })
	if err != nil {
		return nil, err
	}
	return &hdfspb.GetContentSummaryResponseProto{Summary: &hdfspb.ContentSummaryProto{
		Length:         proto.Uint64(cs.length),
		FileCount:      proto.Uint64(cs.files),
		DirectoryCount: proto.Uint64(cs.dirs),
		Quota:          proto.Uint64(math.MaxUint64), // -1: no quota
		SpaceConsumed:  proto.Uint64(cs.spaceConsumed),
		SpaceQuota:     proto.Uint64(math.MaxUint64),
	}}, nil
}

func (s *nnSession) setPermission(req *hdfspb.SetPermissionRequestProto) (proto.Message, error) {
	var err error
	s.nn.locked(func(ns *namespace) { err = ns.setPermission(req.GetSrc(), req.GetPermission().GetPerm()) })
	if err != nil {
		return nil, err
	}
	return &hdfspb.SetPermissionResponseProto{}, nil
}

func (s *nnSession) setOwner(req *hdfspb.SetOwnerRequestProto) (proto.Message, error) {
	var err error
	s.nn.locked(func(ns *namespace) { err = ns.setOwner(req.GetSrc(), req.GetUsername(), req.GetGroupname()) })
	if err != nil {
		return nil, err
	}
	return &hdfspb.SetOwnerResponseProto{}, nil
}

func (s *nnSession) setTimes(req *hdfspb.SetTimesRequestProto) (proto.Message, error) {
	var err error
	s.nn.locked(func(ns *namespace) { err = ns.setTimes(req.GetSrc(), req.GetMtime(), req.GetAtime()) })
	if err != nil {
		return nil, err
	}
	return &hdfspb.SetTimesResponseProto{}, nil
}

// fileBlocks returns the blocks of the file at p (for the Server's helpers).
func (nn *namenode) fileBlocks(p string) ([]locatedBlock, error) {
	var (
		bs  []locatedBlock
		err error
	)
	nn.locked(func(ns *namespace) { bs, err = ns.fileBlocks(p) })
	return slices.Clip(bs), err
}

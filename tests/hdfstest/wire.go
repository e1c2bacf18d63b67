package hdfstest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"

	"github.com/xdlgo/xps/tests/hdfstest/hdfspb"
)

// Framing shared by both protocols, and the framing of each. Everything here
// works on byte slices or plain readers; no function owns a connection.

var errFrame = errors.New("hdfstest: malformed frame")

// appendDelimited appends m to dst, prefixed with its length as a varint
// (protobuf's writeDelimitedTo).
func appendDelimited(dst []byte, m proto.Message) ([]byte, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", m, err)
	}
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...), nil
}

// splitDelimited takes one varint-delimited message off the front of buf.
func splitDelimited(buf []byte) (msg, rest []byte, err error) {
	n, k := binary.Uvarint(buf)
	if k <= 0 || n > uint64(len(buf)-k) {
		return nil, nil, fmt.Errorf("%w: bad delimited message length", errFrame)
	}
	return buf[k : k+int(n)], buf[k+int(n):], nil
}

// readDelimited reads one varint-delimited message of at most max bytes.
func readDelimited(r *bufio.Reader, m proto.Message, max int) error {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if n > uint64(max) {
		return fmt.Errorf("%w: message of %d bytes exceeds %d", errFrame, n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return noEOF(err)
	}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("unmarshal %T: %w", m, err)
	}
	return nil
}

// noEOF turns io.EOF in the middle of a message into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Hadoop RPC (org.apache.hadoop.ipc.Server, ProtobufRpcEngine).
const (
	rpcMagic                = "hrpc"
	rpcVersion              = 9
	rpcServiceClass         = 0
	rpcAuthNone             = 0    // simple authentication
	rpcAuthSASL             = 0xdf // not supported here
	connectionContextCallID = -3
	pingCallID              = -4
	clientProtocolName      = "org.apache.hadoop.hdfs.protocol.ClientProtocol"
	maxRPCFrame             = 64 << 20 // ipc.maximum.data.length
)

// readPreamble reads and checks the 7-byte connection preamble: "hrpc",
// version, service class, auth protocol.
func readPreamble(r io.Reader) error {
	var p [7]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return fmt.Errorf("read preamble: %w", err)
	}
	switch {
	case string(p[:4]) != rpcMagic:
		return fmt.Errorf("%w: preamble %q is not hrpc", errFrame, p[:4])
	case p[4] != rpcVersion:
		return fmt.Errorf("%w: rpc version %d, want %d", errFrame, p[4], rpcVersion)
	case p[6] == rpcAuthSASL:
		return fmt.Errorf("%w: SASL authentication is not supported (simple auth only)", errFrame)
	case p[6] != rpcAuthNone:
		return fmt.Errorf("%w: unknown auth protocol %#x", errFrame, p[6])
	}
	return nil
}

// readRPCFrame reads one frame: a 4-byte big-endian length and that many
// bytes, which hold varint-delimited messages.
func readRPCFrame(r io.Reader) ([]byte, error) {
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(l[:])
	if n > maxRPCFrame {
		return nil, fmt.Errorf("%w: rpc frame of %d bytes exceeds %d", errFrame, n, maxRPCFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, noEOF(err)
	}
	return b, nil
}

// encodeRPCFrame frames msgs, each varint-delimited, behind a 4-byte length.
// nil messages are skipped (an error response carries only its header).
func encodeRPCFrame(msgs ...proto.Message) ([]byte, error) {
	b := make([]byte, 4, 256)
	for _, m := range msgs {
		if m == nil {
			continue
		}
		var err error
		if b, err = appendDelimited(b, m); err != nil {
			return nil, err
		}
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

// rpcRequest is one decoded call.
type rpcRequest struct {
	header *hdfspb.RpcRequestHeaderProto
	method *hdfspb.RequestHeaderProto // nil for the connection context
	body   []byte                     // the request message, still encoded
}

// decodeRPCRequest splits a request frame into its header, method header and
// body. The connection context (callId -3) has no method header: its body is
// the IpcConnectionContextProto.
func decodeRPCRequest(frame []byte) (rpcRequest, error) {
	hb, rest, err := splitDelimited(frame)
	if err != nil {
		return rpcRequest{}, err
	}
	req := rpcRequest{header: &hdfspb.RpcRequestHeaderProto{}}
	if err := proto.Unmarshal(hb, req.header); err != nil {
		return rpcRequest{}, fmt.Errorf("unmarshal RpcRequestHeaderProto: %w", err)
	}
	if req.header.GetCallId() < 0 {
		if len(rest) > 0 {
			req.body, _, err = splitDelimited(rest)
		}
		return req, err
	}
	mb, rest, err := splitDelimited(rest)
	if err != nil {
		return rpcRequest{}, err
	}
	req.method = &hdfspb.RequestHeaderProto{}
	if err := proto.Unmarshal(mb, req.method); err != nil {
		return rpcRequest{}, fmt.Errorf("unmarshal RequestHeaderProto: %w", err)
	}
	if len(rest) > 0 {
		if req.body, rest, err = splitDelimited(rest); err != nil {
			return rpcRequest{}, err
		}
	}
	if len(rest) > 0 {
		return rpcRequest{}, fmt.Errorf("%w: %d trailing bytes in rpc request", errFrame, len(rest))
	}
	return req, nil
}

// DataTransferProtocol (org.apache.hadoop.hdfs.protocol.datatransfer).
const (
	dataTransferVersion = 28
	opWriteBlock        = 0x50
	opReadBlock         = 0x51
	opBlockChecksum     = 0x55
	maxOpMessage        = 1 << 20
	maxPacketSize       = 16 << 20 // PacketReceiver.MAX_PACKET_SIZE
	heartbeatSeqno      = -1
)

// readOpHeader reads the 2-byte protocol version and the 1-byte opcode that
// open every datanode operation.
func readOpHeader(r io.Reader) (op byte, err error) {
	var h [3]byte
	if _, err := io.ReadFull(r, h[:1]); err != nil {
		return 0, err // a clean EOF between operations
	}
	if _, err := io.ReadFull(r, h[1:]); err != nil {
		return 0, noEOF(err)
	}
	if v := binary.BigEndian.Uint16(h[:2]); v != dataTransferVersion {
		return 0, fmt.Errorf("%w: Version Mismatch (Expected: %d, Received: %d )", errFrame, dataTransferVersion, v)
	}
	return h[2], nil
}

// appendPacket appends one data packet:
//
//	uint32 payload length (4 + checksums + data: it counts itself, not the header)
//	uint16 header length
//	PacketHeaderProto
//	checksums
//	data
func appendPacket(dst []byte, hdr *hdfspb.PacketHeaderProto, sums, data []byte) ([]byte, error) {
	hb, err := proto.Marshal(hdr)
	if err != nil {
		return nil, fmt.Errorf("marshal PacketHeaderProto: %w", err)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(4+len(sums)+len(data)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(hb)))
	dst = append(dst, hb...)
	dst = append(dst, sums...)
	return append(dst, data...), nil
}

// readPacket reads one data packet and splits its payload into checksums and
// data by the header's dataLen.
func readPacket(r io.Reader) (hdr *hdfspb.PacketHeaderProto, sums, data []byte, err error) {
	var lens [6]byte
	if _, err := io.ReadFull(r, lens[:]); err != nil {
		return nil, nil, nil, noEOF(err)
	}
	plen := binary.BigEndian.Uint32(lens[:4])
	hlen := binary.BigEndian.Uint16(lens[4:])
	if plen < 4 || plen > maxPacketSize {
		return nil, nil, nil, fmt.Errorf("%w: packet payload length %d", errFrame, plen)
	}
	b := make([]byte, int(hlen)+int(plen)-4)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, nil, nil, noEOF(err)
	}
	hdr = &hdfspb.PacketHeaderProto{}
	if err := proto.Unmarshal(b[:hlen], hdr); err != nil {
		return nil, nil, nil, fmt.Errorf("unmarshal PacketHeaderProto: %w", err)
	}
	payload := b[hlen:]
	dl := hdr.GetDataLen()
	if dl < 0 || int(dl) > len(payload) {
		return nil, nil, nil, fmt.Errorf("%w: dataLen %d exceeds payload of %d bytes", errFrame, dl, len(payload))
	}
	split := len(payload) - int(dl)
	return hdr, payload[:split], payload[split:], nil
}

func uint32Ptr(v uint32) *uint32 { return &v }

package hdfstest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/protobuf/proto"

	"github.com/xdlgo/xps/tests/hdfstest/hdfspb"
)

// datanode serves DataTransferProtocol (version 28) from a blockStore.
type datanode struct {
	logf   func(format string, args ...any)
	store  *blockStore
	poolID string
}

// serveConn serves operations on conn until the client hangs up or an
// operation fails. Reads and checksum requests may be followed by another
// operation on the same connection, as a DataXceiver allows; a write is
// always the last operation. The caller closes conn.
func (dn *datanode) serveConn(conn net.Conn) {
	r := bufio.NewReader(conn)
	w := bufio.NewWriterSize(conn, writePacketSize+4096)
	for {
		op, err := readOpHeader(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				dn.logf("hdfstest: datanode %s: %v", conn.RemoteAddr(), err)
			}
			return
		}
		var keep bool
		switch op {
		case opReadBlock:
			keep, err = dn.readBlock(r, w)
		case opWriteBlock:
			err = dn.writeBlock(r, w)
		case opBlockChecksum:
			keep, err = dn.blockChecksum(r, w)
		default:
			err = fmt.Errorf("unknown op %#x in data stream", op)
			dn.respond(w, &hdfspb.BlockOpResponseProto{
				Status: hdfspb.Status_ERROR_UNSUPPORTED.Enum(), Message: proto.String(err.Error())})
		}
		if err != nil {
			dn.logf("hdfstest: datanode %s: %v", conn.RemoteAddr(), err)
		}
		if !keep {
			return
		}
	}
}

// respond writes and flushes a BlockOpResponseProto.
//
// The Go client reads this message by grabbing 5 bytes before it decodes the
// length varint, so the message must encode to at least 4 bytes or the
// client waits for bytes that never come (the write path) or swallows the
// start of the first packet (the read path). A bare {status: SUCCESS} is 2
// bytes; like Hadoop, we add an empty firstBadLink, which makes it 4.
func (dn *datanode) respond(w *bufio.Writer, resp *hdfspb.BlockOpResponseProto) error {
	if resp.FirstBadLink == nil && proto.Size(resp) < 4 {
		resp.FirstBadLink = proto.String("")
	}
	b, err := appendDelimited(nil, resp)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

func (dn *datanode) fail(w *bufio.Writer, status hdfspb.Status, err error) error {
	if werr := dn.respond(w, &hdfspb.BlockOpResponseProto{Status: status.Enum(), Message: proto.String(err.Error())}); werr != nil {
		return fmt.Errorf("%w (and sending the error: %v)", err, werr)
	}
	return err
}

func (dn *datanode) checkPool(b *hdfspb.ExtendedBlockProto) error {
	if p := b.GetPoolId(); p != dn.poolID {
		return fmt.Errorf("block pool %q of blk_%d is not served here (%q)", p, b.GetBlockId(), dn.poolID)
	}
	return nil
}

// readBlock serves READ_BLOCK: a BlockOpResponseProto with the checksum
// scheme and the chunk-aligned start, then packets of whole chunks, then an
// empty packet marked last. The reader then may send a
// ClientReadStatusProto, which is read and ignored.
func (dn *datanode) readBlock(r *bufio.Reader, w *bufio.Writer) (keep bool, err error) {
	op := &hdfspb.OpReadBlockProto{}
	if err := readDelimited(r, op, maxOpMessage); err != nil {
		return false, fmt.Errorf("read OpReadBlockProto: %w", err)
	}
	b := op.GetHeader().GetBaseHeader().GetBlock()
	if err := dn.checkPool(b); err != nil {
		return false, dn.fail(w, hdfspb.Status_ERROR, err)
	}
	v, err := dn.store.read(b.GetBlockId(), b.GetGenerationStamp(), int64(op.GetOffset()), int64(op.GetLen()))
	if err != nil {
		return false, dn.fail(w, hdfspb.Status_ERROR, err)
	}
	csum := v.csum
	sums := v.sums
	if !op.GetSendChecksums() {
		csum.typ, sums = hdfspb.ChecksumTypeProto_CHECKSUM_NULL, nil
	}
	err = dn.respond(w, &hdfspb.BlockOpResponseProto{
		Status: hdfspb.Status_SUCCESS.Enum(),
		ReadOpChecksumInfo: &hdfspb.ReadOpChecksumInfoProto{
			Checksum:    csum.proto(),
			ChunkOffset: proto.Uint64(uint64(v.start)),
		},
	})
	if err != nil {
		return false, fmt.Errorf("blk_%d: send response: %w", b.GetBlockId(), err)
	}

	bpc := csum.bpc
	perPacket := max(1, writePacketSize/bpc) * bpc
	var seq int64
	var buf []byte
	send := func(off int, data []byte, last bool) error {
		var s []byte
		if sz := csum.size(); sz > 0 {
			s = sums[off/bpc*sz : (off+len(data)+bpc-1)/bpc*sz]
		}
		hdr := &hdfspb.PacketHeaderProto{
			OffsetInBlock:     proto.Int64(v.start + int64(off)),
			Seqno:             proto.Int64(seq),
			LastPacketInBlock: proto.Bool(last),
			DataLen:           proto.Int32(int32(len(data))),
		}
		seq++
		var err error
		if buf, err = appendPacket(buf[:0], hdr, s, data); err != nil {
			return err
		}
		_, err = w.Write(buf)
		return err
	}
	for off := 0; off < len(v.data); off += perPacket {
		if err := send(off, v.data[off:min(off+perPacket, len(v.data))], false); err != nil {
			return false, fmt.Errorf("blk_%d: send packet: %w", b.GetBlockId(), err)
		}
	}
	if err := send(len(v.data), nil, true); err != nil {
		return false, fmt.Errorf("blk_%d: send last packet: %w", b.GetBlockId(), err)
	}
	if err := w.Flush(); err != nil {
		return false, fmt.Errorf("blk_%d: send packets: %w", b.GetBlockId(), err)
	}
	// The Java client reports CHECKSUM_OK or SUCCESS here; the Go client
	// just hangs up.
	if err := readDelimited(r, &hdfspb.ClientReadStatusProto{}, maxOpMessage); err != nil {
		return false, nil
	}
	return true, nil
}

// writeBlock serves WRITE_BLOCK for a new block (stage
// PIPELINE_SETUP_CREATE) with no downstream targets: a BlockOpResponseProto,
// then for each packet the data's checksums are verified and the data stored
// before a PipelineAckProto answers it. A bad checksum is answered with
// ERROR_CHECKSUM and ends the operation. The last packet finalizes the
// replica before it is acknowledged, so the client's complete call, which
// follows the last ack, finds it finalized.
func (dn *datanode) writeBlock(r *bufio.Reader, w *bufio.Writer) error {
	op := &hdfspb.OpWriteBlockProto{}
	if err := readDelimited(r, op, maxOpMessage); err != nil {
		return fmt.Errorf("read OpWriteBlockProto: %w", err)
	}
	b := op.GetHeader().GetBaseHeader().GetBlock()
	id := b.GetBlockId()
	if err := dn.checkPool(b); err != nil {
		return dn.fail(w, hdfspb.Status_ERROR, err)
	}
	if n := len(op.GetTargets()); n > 0 {
		return dn.fail(w, hdfspb.Status_ERROR, fmt.Errorf("blk_%d: a pipeline of %d more datanodes is not supported", id, n))
	}
	if st := op.GetStage(); st != hdfspb.OpWriteBlockProto_PIPELINE_SETUP_CREATE {
		return dn.fail(w, hdfspb.Status_ERROR_UNSUPPORTED, fmt.Errorf("blk_%d: block construction stage %v is not supported", id, st))
	}
	csum, err := newChecksumSpec(op.GetRequestedChecksum())
	if err != nil {
		return dn.fail(w, hdfspb.Status_ERROR_INVALID, fmt.Errorf("blk_%d: %w", id, err))
	}
	if err := dn.store.create(id, b.GetGenerationStamp(), csum); err != nil {
		return dn.fail(w, hdfspb.Status_ERROR, err)
	}
	if err := dn.respond(w, &hdfspb.BlockOpResponseProto{Status: hdfspb.Status_SUCCESS.Enum()}); err != nil {
		return fmt.Errorf("blk_%d: send response: %w", id, err)
	}
	ack := func(seq int64, status hdfspb.Status) error {
		b, err := appendDelimited(nil, &hdfspb.PipelineAckProto{Seqno: proto.Int64(seq), Reply: []hdfspb.Status{status}})
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return w.Flush()
	}
	for {
		hdr, sums, data, err := readPacket(r)
		if err != nil {
			return fmt.Errorf("blk_%d: read packet: %w", id, err)
		}
		seq, last := hdr.GetSeqno(), hdr.GetLastPacketInBlock()
		if seq == heartbeatSeqno && !last && len(data) == 0 {
			if err := ack(seq, hdfspb.Status_SUCCESS); err != nil {
				return fmt.Errorf("blk_%d: ack heartbeat: %w", id, err)
			}
			continue
		}
		var bad error
		status := hdfspb.Status_ERROR
		if want := csum.numChunks(len(data)) * csum.size(); len(sums) != want {
			bad = fmt.Errorf("blk_%d: packet %d has %d checksum bytes for %d data bytes, want %d", id, seq, len(sums), len(data), want)
		} else if i := csum.verify(data, sums); i >= 0 {
			status = hdfspb.Status_ERROR_CHECKSUM
			bad = fmt.Errorf("blk_%d: checksum error in packet %d, chunk %d (block offset %d)",
				id, seq, i, hdr.GetOffsetInBlock()+int64(i*csum.bpc))
		} else if err := dn.store.write(id, hdr.GetOffsetInBlock(), data, last); err != nil {
			bad = fmt.Errorf("blk_%d: %w", id, err)
		}
		if bad != nil {
			if err := ack(seq, status); err != nil {
				return fmt.Errorf("%w (and sending the ack: %v)", bad, err)
			}
			return bad
		}
		if err := ack(seq, hdfspb.Status_SUCCESS); err != nil {
			return fmt.Errorf("blk_%d: ack packet %d: %w", id, seq, err)
		}
		if last {
			return nil
		}
	}
}

// blockChecksum serves BLOCK_CHECKSUM: the MD5 of the block's stored CRCs,
// which the client combines into HDFS's MD5-of-MD5-of-CRC file checksum.
func (dn *datanode) blockChecksum(r *bufio.Reader, w *bufio.Writer) (keep bool, err error) {
	op := &hdfspb.OpBlockChecksumProto{}
	if err := readDelimited(r, op, maxOpMessage); err != nil {
		return false, fmt.Errorf("read OpBlockChecksumProto: %w", err)
	}
	b := op.GetHeader().GetBlock()
	if err := dn.checkPool(b); err != nil {
		return false, dn.fail(w, hdfspb.Status_ERROR, err)
	}
	csum, crcs, sum, err := dn.store.blockChecksum(b.GetBlockId())
	if err != nil {
		return false, dn.fail(w, hdfspb.Status_ERROR, err)
	}
	err = dn.respond(w, &hdfspb.BlockOpResponseProto{
		Status: hdfspb.Status_SUCCESS.Enum(),
		ChecksumResponse: &hdfspb.OpBlockChecksumResponseProto{
			BytesPerCrc:   proto.Uint32(uint32(csum.bpc)),
			CrcPerBlock:   proto.Uint64(crcs),
			BlockChecksum: sum,
			CrcType:       csum.typ.Enum(),
		},
	})
	if err != nil {
		return false, fmt.Errorf("blk_%d: send checksum: %w", b.GetBlockId(), err)
	}
	return true, nil
}

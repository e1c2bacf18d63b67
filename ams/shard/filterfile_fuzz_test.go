package shard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/xdlgo/xps/filters"
)

// appendFilterStates is the framing writeFilter gives a filter file: per
// partition, in increasing order, its number and its state's length (both
// uint32, little-endian) and the state.
func appendFilterStates(b []byte, states []filterState) []byte {
	for _, e := range states {
		b = binary.LittleEndian.AppendUint32(b, e.part)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(e.state)))
		b = append(b, e.state...)
	}
	return b
}

// FuzzParseFilterStates reads arbitrary bytes as an admission filter file
// of a snapshot: the framing is accepted only with partitions in strictly
// increasing order and every state whole, and then it frames back to the
// same bytes; anything else is an error wrapping filters.ErrCorrupt. (The
// states themselves check themselves: filters.FuzzUnmarshalPartition.)
func FuzzParseFilterStates(f *testing.F) {
	f.Add(appendFilterStates(nil, []filterState{{part: 0, state: []byte("abc")}, {part: 7, state: nil}, {part: 1 << 31, state: []byte{1}}}))
	f.Add(appendFilterStates(nil, []filterState{{part: 3, state: []byte("x")}, {part: 3, state: []byte("y")}}))
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		states, err := parseFilterStates(b)
		if err != nil {
			if !errors.Is(err, filters.ErrCorrupt) {
				t.Fatalf("parseFilterStates(%x) = %v, not filters.ErrCorrupt", b, err)
			}
			return
		}
		for i := 1; i < len(states); i++ {
			if states[i].part <= states[i-1].part {
				t.Fatalf("parseFilterStates(%x) took partition %d after %d", b, states[i].part, states[i-1].part)
			}
		}
		if back := appendFilterStates(nil, states); !bytes.Equal(back, b) {
			t.Fatalf("parseFilterStates(%x) = %v, which frames back as %x", b, states, back)
		}
	})
}

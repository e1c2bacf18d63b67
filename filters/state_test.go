package filters

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/xdlgo/xps/model/hashmix"
)

// tinyCount is a count spec at the smallest budget, so that states are
// short and every bit of one can be flipped.
var tinyCount = Spec{Kind: KindCount, N: 3, MaxPartitionBytes: 384}

// fullState returns a filter of tinyCount over two partitions whose
// partition 0 holds every generation, filled with fresh IDs from the
// argument from on, and that partition's state.
func fullState(t testing.TB, from uint64) (*Filter, []byte) {
	t.Helper()
	f := mustNew(t, tinyCount, 2)
	for next := from; len(f.state(0).gens) < f.Sizing().Generations || f.state(0).gens[1].inserts[0] == 0; next++ {
		if next-from > 1000 {
			t.Fatalf("1000 fresh sightings did not begin a second generation of capacity %d", f.Sizing().Capacity)
		}
		f.Admit(0, hashmix.Mix64(next))
	}
	return f, f.MarshalPartition(0)
}

// reseal replaces the checksum of a state with the right one for its
// other bytes, so that the checks behind the checksum are reached.
func reseal(b []byte) []byte {
	b = slices.Clone(b)
	n := len(b) - trailerLen
	binary.LittleEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
	return b
}

// refuse checks that loading data into partition 0 of f fails with want
// and leaves the partition's state as it was.
func refuse(t *testing.T, f *Filter, data []byte, want error, what string) {
	t.Helper()
	before := f.MarshalPartition(0)
	err := f.UnmarshalPartition(0, data)
	if !errors.Is(err, want) {
		t.Fatalf("%s: UnmarshalPartition = %v, want %v", what, err, want)
	}
	if want == ErrCorrupt && errors.Is(err, ErrMismatch) || want == ErrMismatch && errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: %v is both corrupt and a mismatch", what, err)
	}
	if !bytes.Equal(f.MarshalPartition(0), before) {
		t.Fatalf("%s: the refused state changed the partition", what)
	}
}

// TestUnmarshalRefusesDamage: every truncation, an extension, and every
// single flipped bit of a state are refused as corrupt.
func TestUnmarshalRefusesDamage(t *testing.T) {
	// f's own state differs from data: a refusal that loaded part of data
	// would show.
	f, _ := fullState(t, 1<<32)
	_, data := fullState(t, 0)
	if len(data) > 1024 {
		t.Fatalf("state of %d bytes: too long to flip every bit", len(data))
	}
	for n := range len(data) {
		refuse(t, f, data[:n], ErrCorrupt, "truncated")
	}
	refuse(t, f, append(slices.Clone(data), 0), ErrCorrupt, "extended")
	for bit := range 8 * len(data) {
		b := slices.Clone(data)
		b[bit/8] ^= 1 << (bit % 8)
		refuse(t, f, b, ErrCorrupt, "bit flipped")
	}
	if err := f.UnmarshalPartition(0, data); err != nil {
		t.Fatalf("the intact state: %v", err)
	}
}

// TestUnmarshalChecksStructure: states with a right checksum that break
// the format or an invariant are refused as corrupt; a header of another
// geometry as a mismatch.
func TestUnmarshalChecksStructure(t *testing.T) {
	f, _ := fullState(t, 1<<32)
	_, data := fullState(t, 0)
	z := f.Sizing()
	genBytes := f.stateGenBytes()
	le := binary.LittleEndian
	edit := func(fn func(b []byte)) []byte {
		b := slices.Clone(data)
		fn(b)
		return reseal(b)
	}
	for _, tc := range []struct {
		what string
		data []byte
		want error
	}{
		{"magic", edit(func(b []byte) { b[0] = 'x' }), ErrCorrupt},
		{"version 2", edit(func(b []byte) { b[4] = 2 }), ErrCorrupt},
		{"reserved", edit(func(b []byte) { b[31] = 1 }), ErrCorrupt},
		{"partition 1", edit(func(b []byte) { le.PutUint32(b[8:], 1) }), ErrCorrupt},
		{"more generations than kept", reseal(slices.Concat(
			data[:26], le.AppendUint16(nil, 3), data[28:headerLen+genBytes], // header, generation 0
			data[headerLen:len(data)-trailerLen], make([]byte, trailerLen))), // 0 again, 1
			ErrCorrupt},
		{"one generation, two present", edit(func(b []byte) { le.PutUint16(b[26:], 1) }), ErrCorrupt},
		{"one generation cut", reseal(slices.Concat(data[:len(data)-genBytes-trailerLen], make([]byte, trailerLen))), ErrCorrupt},
		{"old generation not full", edit(func(b []byte) {
			le.PutUint32(b[headerLen:], uint32(z.Capacity-1))
			le.PutUint32(b[headerLen+4:], 0)
		}), ErrCorrupt},
		{"current generation full", edit(func(b []byte) { le.PutUint32(b[headerLen+genBytes:], uint32(z.Capacity)) }), ErrCorrupt},
		{"above capacity", edit(func(b []byte) { le.PutUint32(b[headerLen+4:], uint32(z.Capacity+1)) }), ErrCorrupt},
		{"kind", edit(func(b []byte) { b[5] = 1 }), ErrMismatch},
		{"levels", edit(func(b []byte) { le.PutUint16(b[6:], 3) }), ErrMismatch},
		{"words", edit(func(b []byte) { le.PutUint32(b[12:], 1<<30) }), ErrMismatch},
		{"hashes", edit(func(b []byte) { b[16]++ }), ErrMismatch},
		{"capacity", edit(func(b []byte) { b[20]++ }), ErrMismatch},
		{"generations", edit(func(b []byte) { b[24] = 5 }), ErrMismatch},
	} {
		refuse(t, f, tc.data, tc.want, tc.what)
	}
}

// TestUnmarshalMismatch: intact states of other specs are refused as
// mismatches (a changed config), not as corrupt.
func TestUnmarshalMismatch(t *testing.T) {
	f, _ := fullState(t, 0)
	for _, s := range []Spec{
		{},
		{Kind: KindProbability, P: 0.5},
		{Kind: KindCount, N: 1},
		{Kind: KindCount, N: 2, MaxPartitionBytes: 384},
		{Kind: KindCount, N: 3, MaxPartitionBytes: 768},
		{Kind: KindCount, N: 3, MaxPartitionBytes: 624, Generations: 3},
		{Kind: KindCount, N: 3, MaxPartitionBytes: 384, FalsePositiveRate: 0.02},
	} {
		other := mustNew(t, s, 2)
		other.Admit(0, 1)
		refuse(t, f, other.MarshalPartition(0), ErrMismatch, s.Kind)
	}
	if err := mustNew(t, Spec{}, 2).UnmarshalPartition(0, f.MarshalPartition(0)); !errors.Is(err, ErrMismatch) {
		t.Errorf("a count state into a none filter: %v, want ErrMismatch", err)
	}
	// The empty state of the same spec empties the partition.
	if err := f.UnmarshalPartition(0, mustNew(t, tinyCount, 2).MarshalPartition(0)); err != nil {
		t.Fatal(err)
	}
	if got := f.Partitions(nil); len(got) != 0 {
		t.Errorf("after loading an empty state, partitions %v hold state", got)
	}
}

// TestStateGolden pins the Bloom bits of an ID (locate's hash and
// locations) and the bytes of a state: a change of hash, of bloom/v3's
// bit layout or of the format that moved them would void every
// snapshot's filters.
func TestStateGolden(t *testing.T) {
	f := mustNew(t, tinyCount, 1)
	f.Admit(0, 1)
	var set []int
	for i, w := range f.parts[0].gens[0].words {
		for b := range 64 {
			if w>>b&1 == 1 {
				set = append(set, 64*i+b)
			}
		}
	}
	if want := []int{25, 163, 301, 327, 465, 629, 767}; !slices.Equal(set, want) {
		t.Errorf("bits of ID 1: %v, want %v", set, want)
	}
	for _, id := range fresh(0, 40) {
		f.Admit(0, id)
		f.Admit(0, id%7)
	}
	sum := sha256.Sum256(f.MarshalPartition(0))
	if got, want := hex.EncodeToString(sum[:]), "29652db055bef5d0c575f1f3b0398f0b0ae615bb71a4aacffe47419112f2d01f"; got != want {
		t.Errorf("state SHA-256 %s, want %s", got, want)
	}
}

// FuzzUnmarshalPartition: no input panics; an input is accepted only
// when it is the canonical encoding of the state it loads; with its
// checksum mended, inputs reach the structural checks too.
func FuzzUnmarshalPartition(f *testing.F) {
	_, data := fullState(f, 0)
	f.Add(data)
	f.Add(mustNew(f, tinyCount, 2).MarshalPartition(0))
	one := mustNew(f, tinyCount, 2)
	one.Admit(0, 1)
	f.Add(one.MarshalPartition(0))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, resealIfLong(b)} {
			g := mustNew(t, tinyCount, 2)
			err := g.UnmarshalPartition(0, in)
			switch {
			case err == nil:
				if out := g.MarshalPartition(0); !bytes.Equal(out, in) {
					t.Fatalf("accepted a state that encodes back to other bytes:\n%x\n%x", in, out)
				}
			case !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMismatch):
				t.Fatalf("refused with %v, neither corrupt nor a mismatch", err)
			}
		}
	})
}

func resealIfLong(b []byte) []byte {
	if len(b) < headerLen+trailerLen {
		return b
	}
	return reseal(b)
}

package slide

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"
)

// ErrBadSave is wrapped by Load's errors for a stream that is not a saved
// layer, is cut short, or was saved by a layer of another shape.
var ErrBadSave = errors.New("slide: bad saved layer")

// saveMagic starts a saved layer; saveVersion is its format.
const (
	saveMagic   = "XPSSLIDE"
	saveVersion = 1
)

// saveHeader is the fixed part of a saved layer, little-endian. The
// arrays follow in this order: W (Dim*InputDim float32), b (Dim), Adam
// state (Dim*(2*InputDim+1)), bias moments m and v (Dim each), step
// counts (Dim uint32).
type saveHeader struct {
	Magic     [8]byte
	Version   uint32
	Family    uint32
	Dim       uint64
	InputDim  uint64
	K, L, R   uint32
	Gen       uint64 // generation of the hash functions in use
	Batch     uint64 // TrainBatch calls so far
	SchedTick int64  // the rehash schedule: ticks, period, period end,
	Period    float64
	PeriodEnd int64
	Cursor    uint64 // sweep cursor,
	Sweeps    uint64 // completed sweeps,
	NextRedr  int64  // tick of the next redraw
}

// Save writes the layer's parameters, Adam state, step counts and rehash
// schedule to w: everything Load needs to continue training exactly where
// this layer is, except the hash tables, which Load rebuilds from the
// weights. A redraw of the hash functions in progress is not saved (the
// loaded layer starts it again at its next period). Save does not stop
// other work: call it between batches.
func (l *Layer) Save(w io.Writer) error {
	l.checkOpen()
	h := saveHeader{Version: saveVersion, Family: uint32(l.cfg.Family), Dim: uint64(l.d), InputDim: uint64(l.din),
		K: uint32(l.par.K), L: uint32(l.par.L), R: uint32(l.par.R), Gen: l.gen, Batch: l.batch,
		SchedTick: l.sched.batch, Period: l.sched.period, PeriodEnd: l.sched.periodEnd,
		Cursor: uint64(l.sched.cursor), Sweeps: uint64(l.sched.sweeps), NextRedr: l.sched.nextRedraw}
	copy(h.Magic[:], saveMagic)
	if l.sched.redrawing {
		// The rebuild is dropped: the loaded layer keeps the functions in
		// use and starts the next rebuild one period from now.
		h.NextRedr = l.sched.batch + int64(l.cfg.Schedule.RedrawPeriod)
		h.Cursor = 0
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := binary.Write(bw, binary.LittleEndian, &h); err != nil {
		return fmt.Errorf("slide: save: %w", err)
	}
	for _, a := range [][]float32{l.w, l.b, l.st, l.mb, l.vb} {
		if err := writeArray(bw, a); err != nil {
			return fmt.Errorf("slide: save: %w", err)
		}
	}
	if err := writeArray(bw, l.steps); err != nil {
		return fmt.Errorf("slide: save: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("slide: save: %w", err)
	}
	return nil
}

// SaveSize is the number of bytes Save writes.
func (l *Layer) SaveSize() int64 {
	return int64(binary.Size(saveHeader{})) + 4*int64(len(l.w)+len(l.b)+len(l.st)+len(l.mb)+len(l.vb)+len(l.steps))
}

// Load replaces the layer's parameters, Adam state, step counts and rehash
// schedule with those Save wrote to r, then rebuilds the hash tables from
// the loaded weights with the saved generation of hash functions. The
// layer's config must give the same shape (Dim, InputDim, family, K, L,
// R) as the saved layer's; anything else, a stream cut short or one that
// is not a saved layer is an error wrapping ErrBadSave. After an error the
// layer's parameters are undefined (the caller should not train on it).
func (l *Layer) Load(r io.Reader) error {
	l.checkOpen()
	var h saveHeader
	br := bufio.NewReaderSize(r, 1<<20)
	if err := binary.Read(br, binary.LittleEndian, &h); err != nil {
		return fmt.Errorf("%w: header: %w", ErrBadSave, err)
	}
	if string(h.Magic[:]) != saveMagic {
		return fmt.Errorf("%w: not a saved SLIDE layer", ErrBadSave)
	}
	if h.Version != saveVersion {
		return fmt.Errorf("%w: format version %d, this build reads %d", ErrBadSave, h.Version, saveVersion)
	}
	want := [...]uint64{uint64(l.d), uint64(l.din), uint64(l.cfg.Family), uint64(l.par.K), uint64(l.par.L), uint64(l.par.R)}
	got := [...]uint64{h.Dim, h.InputDim, uint64(h.Family), uint64(h.K), uint64(h.L), uint64(h.R)}
	if want != got {
		return fmt.Errorf("%w: saved shape (Dim, InputDim, family, K, L, R) = %v, this layer's is %v", ErrBadSave, got, want)
	}
	// A layer without hash tables (sparsity 1: dense training) has no
	// rehash schedule: its period is 0.
	if h.Cursor > uint64(l.d) || math.IsNaN(h.Period) || h.Period < 1 && (l.tables != nil || h.Period != 0) {
		return fmt.Errorf("%w: bad rehash schedule (cursor %d, period %v)", ErrBadSave, h.Cursor, h.Period)
	}
	for _, a := range [][]float32{l.w, l.b, l.st, l.mb, l.vb} {
		if err := readArray(br, a); err != nil {
			return fmt.Errorf("%w: %w", ErrBadSave, err)
		}
	}
	if err := readArray(br, l.steps); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSave, err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: bytes after the layer", ErrBadSave)
	}
	l.batch, l.gen = h.Batch, h.Gen
	l.sched.batch, l.sched.period, l.sched.periodEnd = h.SchedTick, h.Period, h.PeriodEnd
	l.sched.cursor, l.sched.sweeps, l.sched.nextRedraw = int(h.Cursor), int(h.Sweeps), h.NextRedr
	l.sched.redrawing, l.sched.rcursor = false, 0
	if l.tables == nil {
		return nil
	}
	fam, err := l.newFamily(l.gen)
	if err != nil {
		return fmt.Errorf("%w: hash functions: %w", ErrBadSave, err)
	}
	l.fam, l.backFam = fam, nil
	l.tables.Clear()
	l.tables.seed = hash3(l.cfg.Seed, tagTable, l.gen)
	clear(l.hashedAt)
	l.Rehash()
	return nil
}

// littleEndian is true on little-endian CPUs, where arrays are written
// and read as their memory.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// writeArray writes a as little-endian words.
func writeArray[T float32 | uint32](w io.Writer, a []T) error {
	if littleEndian {
		_, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), 4*len(a)))
		return err
	}
	return binary.Write(w, binary.LittleEndian, a)
}

// readArray fills a from little-endian words.
func readArray[T float32 | uint32](r io.Reader, a []T) error {
	if littleEndian {
		_, err := io.ReadFull(r, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), 4*len(a)))
		return err
	}
	return binary.Read(r, binary.LittleEndian, a)
}

package dslidenet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/xdlgo/xps/sparsenet/slide"
	"github.com/xdlgo/xps/sparsenet/slide/dslide"
)

// errShort reports a message cut short or holding more than it says.
var errShort = errors.New("dslidenet: malformed message")

// maxCount bounds any count a message declares before it is allocated.
const maxCount = 1 << 28

// enc appends little-endian values.
type enc struct{ b []byte }

func (e *enc) u8(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}
func (e *enc) u32(v uint32)  { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64)  { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) f32(v float32) { e.u32(math.Float32bits(v)) }
func (e *enc) f64(v float64) { e.u64(math.Float64bits(v)) }
func (e *enc) floats(v []float32) {
	e.u32(uint32(len(v)))
	for _, f := range v {
		e.f32(f)
	}
}
func (e *enc) ints(v []int32) {
	e.u32(uint32(len(v)))
	for _, x := range v {
		e.u32(uint32(x))
	}
}

// dec reads what enc wrote; the first failure sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil || n > len(d.b) {
		d.err = errShort
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}
func (d *dec) u8() bool {
	p := d.take(1)
	if p == nil {
		return false
	}
	if p[0] > 1 {
		d.err = errShort
	}
	return p[0] == 1
}
func (d *dec) u32() uint32 {
	if p := d.take(4); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}
func (d *dec) u64() uint64 {
	if p := d.take(8); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}
func (d *dec) f32() float32 { return math.Float32frombits(d.u32()) }
func (d *dec) f64() float64 { return math.Float64frombits(d.u64()) }

// count reads a count of items of size bytes each, checked against what
// is left.
func (d *dec) count(size int) int {
	n := int(d.u32())
	if d.err == nil && (n > maxCount || n*size > len(d.b)) {
		d.err = errShort
	}
	if d.err != nil {
		return 0
	}
	return n
}
func (d *dec) floats() []float32 {
	n := d.count(4)
	v := make([]float32, n)
	for i := range v {
		v[i] = d.f32()
	}
	return v
}
func (d *dec) ints() []int32 {
	n := d.count(4)
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(d.u32())
	}
	return v
}

// end fails unless every byte was read.
func (d *dec) end(what string) error {
	if d.err == nil && len(d.b) > 0 {
		d.err = errShort
	}
	if d.err != nil {
		return fmt.Errorf("%w: %s", d.err, what)
	}
	return nil
}

// The messages, each a dslide type with its encoding.
type (
	fwdReq  dslide.ForwardRequest
	fwdRep  dslide.ForwardReply
	backReq dslide.BackwardRequest
	backRep dslide.BackwardReply
	predReq dslide.PredictRequest
	predRep dslide.PredictReply
)

func (m *fwdReq) MarshalBinary() ([]byte, error) {
	e := enc{b: make([]byte, 0, 48+4*len(m.X)+8*len(m.Labels))}
	e.u64(m.Version)
	e.u64(m.Round)
	e.u32(uint32(m.Worker))
	e.u32(uint32(m.N))
	e.u64(m.Pause)
	e.u8(m.Poll)
	e.u8(m.Dense)
	e.u64(uint64(m.Wait))
	e.floats(m.X)
	e.u32(uint32(len(m.Labels)))
	for _, l := range m.Labels {
		e.ints(l)
	}
	return e.b, nil
}

func (m *fwdReq) UnmarshalBinary(b []byte) error {
	d := dec{b: b}
	m.Version, m.Round = d.u64(), d.u64()
	m.Worker, m.N = int(int32(d.u32())), int(int32(d.u32()))
	m.Pause, m.Poll, m.Dense = d.u64(), d.u8(), d.u8()
	m.Wait = time.Duration(d.u64())
	m.X = d.floats()
	if nl := d.count(4); d.err == nil && nl > 0 && (nl != m.N || nl > len(m.X)) {
		d.err = errShort // one label list per sample of at least one input, or none (a poll)
	} else {
		m.Labels = make([][]int32, nl)
	}
	for i := range m.Labels {
		m.Labels[i] = d.ints()
	}
	return d.end("forward request")
}

const partialSize = 4 + 8 + 4 + 8

func (m *fwdRep) MarshalBinary() ([]byte, error) {
	e := enc{b: make([]byte, 0, 32+partialSize*len(m.Parts)+4*len(m.Logits))}
	e.u8(m.Pending)
	e.u8(m.Resend)
	e.u64(m.Info.Pause)
	e.u32(uint32(m.Info.Samples))
	e.u32(uint32(m.Info.WithLabels))
	e.u32(uint32(m.Active))
	e.u32(uint32(len(m.Parts)))
	for _, p := range m.Parts {
		e.f32(p.Max)
		e.f64(p.Sum)
		e.u32(uint32(p.Labels))
		e.f64(p.LabelLogits)
	}
	e.floats(m.Logits)
	return e.b, nil
}

func (m *fwdRep) UnmarshalBinary(b []byte) error {
	d := dec{b: b}
	m.Pending, m.Resend, m.Info.Pause = d.u8(), d.u8(), d.u64()
	m.Info.Samples, m.Info.WithLabels, m.Active = int(d.u32()), int(d.u32()), int(d.u32())
	m.Parts = make([]slide.Partial, d.count(partialSize))
	for i := range m.Parts {
		p := &m.Parts[i]
		p.Max, p.Sum, p.Labels, p.LabelLogits = d.f32(), d.f64(), int32(d.u32()), d.f64()
	}
	m.Logits = d.floats()
	return d.end("forward reply")
}

const globalSize = 4 + 8 + 4

func (m *backReq) MarshalBinary() ([]byte, error) {
	e := enc{b: make([]byte, 0, 40+globalSize*len(m.Globals))}
	e.u64(m.Version)
	e.u64(m.Round)
	e.u32(uint32(m.Worker))
	e.u8(m.Poll)
	e.u64(uint64(m.Wait))
	e.u32(uint32(len(m.Globals)))
	for _, g := range m.Globals {
		e.f32(g.Max)
		e.f64(g.Sum)
		e.u32(uint32(g.Labels))
	}
	return e.b, nil
}

func (m *backReq) UnmarshalBinary(b []byte) error {
	d := dec{b: b}
	m.Version, m.Round = d.u64(), d.u64()
	m.Worker = int(int32(d.u32()))
	m.Poll = d.u8()
	m.Wait = time.Duration(d.u64())
	m.Globals = make([]slide.Global, d.count(globalSize))
	for i := range m.Globals {
		g := &m.Globals[i]
		g.Max, g.Sum, g.Labels = d.f32(), d.f64(), int32(d.u32())
	}
	return d.end("backward request")
}

func (m *backRep) MarshalBinary() ([]byte, error) {
	e := enc{b: make([]byte, 0, 9+4*len(m.Dx))}
	e.u8(m.Pending)
	e.u8(m.Resend)
	e.floats(m.Dx)
	return e.b, nil
}

func (m *backRep) UnmarshalBinary(b []byte) error {
	d := dec{b: b}
	m.Pending, m.Resend = d.u8(), d.u8()
	m.Dx = d.floats()
	return d.end("backward reply")
}

func (m *predReq) MarshalBinary() ([]byte, error) {
	e := enc{b: make([]byte, 0, 24+4*len(m.X))}
	e.u64(m.Version)
	e.u32(uint32(m.N))
	e.u32(uint32(m.K))
	e.u8(m.Sparse)
	e.u8(m.Rehash)
	e.floats(m.X)
	return e.b, nil
}

func (m *predReq) UnmarshalBinary(b []byte) error {
	d := dec{b: b}
	m.Version = d.u64()
	m.N, m.K = int(int32(d.u32())), int(int32(d.u32()))
	m.Sparse, m.Rehash = d.u8(), d.u8()
	m.X = d.floats()
	return d.end("predict request")
}

func (m *predRep) MarshalBinary() ([]byte, error) {
	e := enc{b: make([]byte, 0, 9+8*len(m.IDs))}
	e.u8(m.Pending)
	e.ints(m.IDs)
	e.floats(m.Scores)
	return e.b, nil
}

func (m *predRep) UnmarshalBinary(b []byte) error {
	d := dec{b: b}
	m.Pending = d.u8()
	m.IDs = d.ints()
	m.Scores = d.floats()
	return d.end("predict reply")
}

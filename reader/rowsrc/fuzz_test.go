package rowsrc_test

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/rowsrc"
)

// validAnswers is what a service answers a source of fuzzMap: the schema
// of a 3-row table (an int64 label, a dict and a nullable float64), its
// dictionary, and the one batch.
func validAnswers() []byte {
	le := binary.LittleEndian
	b := []byte(`{"version":1,"table":"train","rows":3,"columns":[{"name":"y","type":"int64"},` +
		`{"name":"t","type":"dict","dict_len":2,"dict_bytes":3},{"name":"v","type":"float64","nullable":true}]}` + "\n")
	for _, o := range []uint64{0, 1, 3} {
		b = le.AppendUint64(b, o)
	}
	b = append(b, "abc"...)
	b = append(b, `{"from":0,"to":3}`+"\n"...)
	for _, y := range []uint64{1, 0, 1} {
		b = le.AppendUint64(b, y)
	}
	for _, c := range []uint32{0, 1, math.MaxUint32} {
		b = le.AppendUint32(b, c)
	}
	for _, v := range []float64{0.5, math.NaN(), 2} {
		b = le.AppendUint64(b, math.Float64bits(v))
	}
	return append(b, 1, 0, 1)
}

// answer returns the client end of a connected pair of Unix sockets
// whose other end reads the requests and writes answers, then closes its
// writing half (the client reads to the end of answers, then EOF).
func answer(t *testing.T, answers []byte) net.Conn {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		conns[i], err = net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	server := conns[1].(*net.UnixConn)
	go func() {
		defer server.Close()
		go func() { // the kernel's buffer may not hold it all
			server.Write(answers)
			server.CloseWrite()
		}()
		io.Copy(io.Discard, server) // the requests, until the client closes
	}()
	return conns[0]
}

var fuzzMap = reader.ColumnMap{Label: "y", Fields: []reader.ColumnField{{Column: "t"}, {Column: "v"}}}

// FuzzAnswers: whatever a service answers, a source returns rows or an
// error: no panic, no hang, no allocation the bytes sent do not pay for.
func FuzzAnswers(f *testing.F) {
	f.Add(validAnswers())
	f.Add([]byte(`{"version":1,"table":"train","rows":1,"columns":[{"name":"y","type":"bool"},{"name":"t","type":"dict","dict_len":268435456,"dict_bytes":0}]}` + "\n"))
	f.Add([]byte(`{"error":"no"}` + "\n"))
	f.Fuzz(func(t *testing.T, answers []byte) {
		client := answer(t, answers)
		src, err := rowsrc.NewSourceConn(rowsrc.Options{Addr: "fuzz", Table: "train", Columns: fuzzMap, Batch: 8192,
			Timeout: rowsrc.DefaultTimeout, Parts: 1}, client)
		if err != nil {
			return
		}
		defer src.Close()
		var g reader.Group
		for range 10 {
			if err := src.Next(context.Background(), &g); err != nil {
				return
			}
			if err := g.Validate(); err != nil {
				t.Fatalf("row %v: %v", g.Pos, err)
			}
		}
	})
}

// TestValidAnswers: the fuzz seed is a valid answer: three rows, the
// null float and the null code giving no feature.
func TestValidAnswers(t *testing.T) {
	client := answer(t, validAnswers())
	src, err := rowsrc.NewSourceConn(rowsrc.Options{Addr: "pipe", Table: "train", Columns: fuzzMap, Batch: 8192,
		Timeout: rowsrc.DefaultTimeout, Parts: 1}, client)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var g reader.Group
	for i, want := range []int{2, 1, 1} {
		if err := src.Next(context.Background(), &g); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if n := len(g.Levels[0].IDs); n != want {
			t.Fatalf("row %d: %d features, want %d", i, n, want)
		}
	}
}

package kafkasrc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/kafkasrc"
	"github.com/xdlgo/xps/tests/kafkatest"
)

func startBroker(t testing.TB, topics map[string]int) *kafkatest.Broker {
	t.Helper()
	b, err := kafkatest.Start(kafkatest.Options{Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// sampleID is the id of a test sample: the token of its field-0 feature,
// written as "s<ID>" and hashed by the reader, so the test keeps a map.
type ids map[uint64]string

// groupMessages returns n sample-group messages with 1-4 samples each; the
// samples are named "m<msg>s<k>".
func groupMessages(n int, seed uint64) ([][]byte, ids) {
	rng := rand.New(rand.NewPCG(seed, 1))
	known := ids{}
	var out [][]byte
	for m := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "group 2\n1 - - 1:u%d\n", m%7)
		for k := range 1 + rng.IntN(4) {
			name := fmt.Sprintf("m%ds%d", m, k)
			known[reader.FeatureID(0, []byte(name))] = name
			fmt.Fprintf(&b, "0 0 %d 0:%s\n", k%2, name)
		}
		out = append(out, []byte(b.String()))
	}
	return out, known
}

// produce writes msgs round-robin over the topic's partitions.
func produce(t testing.TB, addrs []string, topic string, msgs [][]byte) {
	t.Helper()
	if err := kafkatest.Produce(context.Background(), addrs, topic, msgs); err != nil {
		t.Fatal(err)
	}
}

// names returns the names of g's samples from g.Pos.Index on.
func names(t testing.TB, g *reader.Group, known ids) []string {
	t.Helper()
	var out []string
	l := &g.Levels[0]
	for i := g.Pos.Index; i < g.NumSamples(); i++ {
		f, id, _ := l.Line(i)
		if len(f) != 1 || f[0] != 0 {
			t.Fatalf("sample %d of %v has fields %v", i, g.Pos, f)
		}
		name, ok := known[id[0]]
		if !ok {
			t.Fatalf("unknown sample id %d at %v", id[0], g.Pos)
		}
		out = append(out, name)
	}
	return out
}

func open(t testing.TB, opts kafkasrc.Options) *kafkasrc.Source {
	t.Helper()
	s, err := kafkasrc.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readAll reads s to io.EOF and returns the sample names by partition.
func readAll(t testing.TB, s *kafkasrc.Source, known ids) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var g reader.Group
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := s.Next(ctx, &g)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[g.Pos.File] = append(out[g.Pos.File], names(t, &g, known)...)
	}
}

func TestBoundedExactlyOnceAcrossWorkers(t *testing.T) {
	b := startBroker(t, map[string]int{"ctr": 4})
	msgs, known := groupMessages(3000, 1)
	produce(t, b.Addrs(), "ctr", msgs)
	var mu sync.Mutex
	seen := map[string]int{}
	perWorker := make([]int, 2)
	var wg sync.WaitGroup
	for w := range 2 {
		parts := kafkasrc.AssignPartitions(4, 2, w)
		s := open(t, kafkasrc.Options{Brokers: b.Addrs(), Topic: "ctr", Partitions: parts, Format: reader.SampleGroup})
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := readAll(t, s, known)
			mu.Lock()
			defer mu.Unlock()
			for stream, ns := range got {
				_, p, _ := kafkasrc.ParseStreamName(stream)
				if !slices.Contains(parts, p) {
					t.Errorf("worker %d read %s, not one of its partitions %v", w, stream, parts)
				}
				for _, n := range ns {
					seen[n]++
					perWorker[w]++
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != len(known) {
		t.Fatalf("read %d distinct samples, want %d", len(seen), len(known))
	}
	for n, c := range seen {
		if c != 1 {
			t.Fatalf("sample %s read %d times", n, c)
		}
	}
	if perWorker[0] == 0 || perWorker[1] == 0 {
		t.Fatalf("samples per worker %v", perWorker)
	}
}

// TestResumeAtRandomPoints stops a reader at random points, inside groups
// too, and resumes a new one from the positions: the samples before and
// after make up every sample once, in each partition's order.
func TestResumeAtRandomPoints(t *testing.T) {
	b := startBroker(t, map[string]int{"t": 3})
	msgs, known := groupMessages(400, 2)
	produce(t, b.Addrs(), "t", msgs)
	opts := kafkasrc.Options{Brokers: b.Addrs(), Topic: "t", Format: reader.SampleGroup, MaxWait: 20 * time.Millisecond}
	want := readAll(t, open(t, opts), known)
	rng := rand.New(rand.NewPCG(5, 6))
	for it := range 12 {
		s := open(t, opts)
		got := map[string][]string{}
		var g reader.Group
		stop := rng.IntN(500)
		var start []reader.Position
		for k := 0; ; k++ {
			if err := s.Next(context.Background(), &g); err != nil {
				if errors.Is(err, io.EOF) {
					start = s.Positions()
					break
				}
				t.Fatal(err)
			}
			ns := names(t, &g, known)
			if k == stop {
				// Take only some samples of this group: the position is inside it.
				j := rng.IntN(len(ns) + 1)
				got[g.Pos.File] = append(got[g.Pos.File], ns[:j]...)
				start = s.Positions()
				for i := range start {
					if start[i].File == g.Pos.File {
						start[i] = reader.Position{File: g.Pos.File, Offset: g.Pos.Offset, Index: g.Pos.Index + j}
					}
				}
				break
			}
			got[g.Pos.File] = append(got[g.Pos.File], ns...)
		}
		s.Close()
		ropts := opts
		ropts.Start = start
		for stream, ns := range readAll(t, open(t, ropts), known) {
			got[stream] = append(got[stream], ns...)
		}
		for stream, ns := range want {
			if !slices.Equal(got[stream], ns) {
				t.Fatalf("iteration %d (stop after %d groups, resume at %v): %s has %d samples, want %d",
					it, stop, start, stream, len(got[stream]), len(ns))
			}
		}
	}
}

func TestStreamingKeepsUpAndLagReturnsToZero(t *testing.T) {
	b := startBroker(t, map[string]int{"live": 2})
	msgs, known := groupMessages(2000, 3)
	s := open(t, kafkasrc.Options{Brokers: b.Addrs(), Topic: "live", Format: reader.SampleGroup, Streaming: true,
		MaxWait: 50 * time.Millisecond})
	done := make(chan struct{})
	go func() { // a producer: 20 writes of 100 messages, 20ms apart
		defer close(done)
		for i := 0; i < len(msgs); i += 100 {
			produce(t, b.Addrs(), "live", msgs[i:i+100])
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var g reader.Group
	n := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for n < len(msgs) {
		if err := s.Next(ctx, &g); err != nil {
			t.Fatalf("after %d messages: %v", n, err)
		}
		names(t, &g, known)
		n++
	}
	<-done
	if lag := s.Lag(); lag != 0 {
		t.Fatalf("lag %d after reading every message, want 0 (%v)", lag, s.PartitionLags())
	}
	// Nothing more: Next waits until its context ends.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := s.Next(short, &g); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on a drained stream = %v, want the context's deadline", err)
	}
	// A new message arrives and the lag is seen before it is read.
	produce(t, b.Addrs(), "live", msgs[:1])
	if err := s.Next(ctx, &g); err != nil {
		t.Fatal(err)
	}
	if s.Lag() != 0 {
		t.Fatalf("lag %d", s.Lag())
	}
}

func TestMalformedMessages(t *testing.T) {
	b := startBroker(t, map[string]int{"bad": 1})
	produce(t, b.Addrs(), "bad", [][]byte{[]byte("1 0:a:1"), []byte("1 0:b:zz"), []byte(""), []byte("0 0:c:1\n1 0:d:1"), []byte("0 0:e:1")})
	opts := kafkasrc.Options{Brokers: b.Addrs(), Topic: "bad", Format: reader.LibFFM}
	s := open(t, opts)
	var g reader.Group
	if err := s.Next(context.Background(), &g); err != nil {
		t.Fatal(err)
	}
	err := s.Next(context.Background(), &g)
	if !errors.Is(err, reader.ErrMalformed) || !strings.Contains(err.Error(), "kafka://bad/0 offset 1") {
		t.Fatalf("error %v, want a malformed-message error naming kafka://bad/0 offset 1", err)
	}
	if err2 := s.Next(context.Background(), &g); err2 != err {
		t.Fatalf("after a stop, Next = %v, want the same error", err2)
	}
	opts.OnError = reader.SkipBad
	s = open(t, opts)
	n := 0
	for {
		err := s.Next(context.Background(), &g)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if st := s.Stats(); n != 2 || st.Skipped != 3 || len(st.Errors) != 3 {
		t.Fatalf("%d groups, %d skipped (%v), want 2 and 3", n, st.Skipped, st.Errors)
	}
}

func TestOpenErrors(t *testing.T) {
	b := startBroker(t, map[string]int{"t": 2})
	produce(t, b.Addrs(), "t", [][]byte{[]byte("1 0:a:1"), []byte("1 0:b:1")})
	for _, tc := range []struct {
		name string
		opts kafkasrc.Options
		want error
	}{
		{"missing topic", kafkasrc.Options{Topic: "nope"}, kafkasrc.ErrNoTopic},
		{"missing partition", kafkasrc.Options{Topic: "t", Partitions: []int{5}}, kafkasrc.ErrNoTopic},
		{"position after the end", kafkasrc.Options{Topic: "t", Start: []reader.Position{{File: "kafka://t/0", Offset: 99}}}, kafkasrc.ErrBadPosition},
		{"negative index", kafkasrc.Options{Topic: "t", Start: []reader.Position{{File: "kafka://t/1", Index: -1}}}, kafkasrc.ErrBadPosition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Brokers, tc.opts.Format = b.Addrs(), reader.LibFFM
			s, err := kafkasrc.Open(context.Background(), tc.opts)
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestStreamNames(t *testing.T) {
	for _, tc := range []struct {
		topic string
		p     int
	}{{"ctr", 0}, {"a/b", 12}, {"x", 3}} {
		topic, p, ok := kafkasrc.ParseStreamName(kafkasrc.StreamName(tc.topic, tc.p))
		if !ok || topic != tc.topic || p != tc.p {
			t.Fatalf("round trip of %q %d = %q %d %v", tc.topic, tc.p, topic, p, ok)
		}
	}
	for _, bad := range []string{"ctr/1", "kafka://", "kafka://t/x", "kafka://t/-1", "kafka:///3"} {
		if _, _, ok := kafkasrc.ParseStreamName(bad); ok {
			t.Errorf("ParseStreamName(%q) ok", bad)
		}
	}
	if got := kafkasrc.AssignPartitions(5, 2, 1); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("AssignPartitions(5,2,1) = %v", got)
	}
}

// TestProduceFiles writes files of several formats into topics (a header
// dropped, groups kept whole) and reads them back.
func TestProduceFiles(t *testing.T) {
	b := startBroker(t, map[string]int{"xml": 1, "grp": 2})
	dir := t.TempDir()
	xml := filepath.Join(dir, "a.xml")
	os.WriteFile(xml, []byte("3 10 4\n1,2 0:1 3:0.5\n\n0 1:2\n# c\n3 2:1\n"), 0o644)
	grp := filepath.Join(dir, "b.group")
	os.WriteFile(grp, []byte("group 2\n1 - - 1:u\n0 0 1 0:a\n0 0 0 0:b\ngroup 1\n0 - 1 0:c\n"), 0o644)
	ctx := context.Background()
	for _, tc := range []struct {
		topic   string
		path    string
		format  reader.Format
		groups  int
		samples int64
	}{{"xml", xml, reader.XML, 3, 3}, {"grp", grp, reader.SampleGroup, 2, 3}} {
		st, err := kafkasrc.ProduceFiles(ctx, []string{tc.path}, kafkasrc.ProduceOptions{Brokers: b.Addrs(), Topic: tc.topic, Format: tc.format})
		if err != nil {
			t.Fatal(err)
		}
		if st.Messages != int64(tc.groups) {
			t.Fatalf("%s: %d messages, want %d", tc.topic, st.Messages, tc.groups)
		}
		s := open(t, kafkasrc.Options{Brokers: b.Addrs(), Topic: tc.topic, Format: tc.format})
		var g reader.Group
		for {
			err := s.Next(ctx, &g)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := s.Stats(); got.Groups != int64(tc.groups) || got.Samples != tc.samples {
			t.Fatalf("%s: read %d groups, %d samples", tc.topic, got.Groups, got.Samples)
		}
	}
}

// TestKcatInterop produces with kcat (librdkafka) into the broker and reads
// the topic back: the broker and our reader speak the protocol that a
// second, independent client implementation speaks.
func TestKcatInterop(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (./test.sh installs it: apt-get install -y kcat)")
	}
	b := startBroker(t, map[string]int{"kc": 2})
	var lines []string
	for i := range 500 {
		lines = append(lines, fmt.Sprintf("%d 0:k%d:1 1:f%d:1", i%2, i, i%13))
	}
	for p := range 2 {
		var part []string
		for i := p; i < len(lines); i += 2 {
			part = append(part, lines[i])
		}
		cmd := exec.Command(kcat, "-P", "-b", strings.Join(b.Addrs(), ","), "-t", "kc", "-p", strconv.Itoa(p))
		cmd.Stdin = strings.NewReader(strings.Join(part, "\n") + "\n")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat: %v: %s", err, out)
		}
	}
	known := ids{}
	for i := range 500 {
		known[reader.FeatureID(0, []byte(fmt.Sprintf("k%d", i)))] = fmt.Sprint(i)
	}
	s := open(t, kafkasrc.Options{Brokers: b.Addrs(), Topic: "kc", Format: reader.LibFFM})
	var g reader.Group
	seen := map[string]bool{}
	for {
		err := s.Next(context.Background(), &g)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		_, id, _ := g.Levels[0].Line(0)
		seen[known[id[0]]] = true
		if want := float32(0); g.Label(0) != want && g.Label(0) != 1 {
			t.Fatalf("label %v", g.Label(0))
		}
	}
	if len(seen) != 500 {
		t.Fatalf("read %d of the 500 messages kcat produced", len(seen))
	}
}

package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"unsafe"
)

// Limits bound what one request may ask of the server and how many it
// serves at once, so that no mix of requests drives its memory past a
// bound: a request's work is bounded by its features (MaxFeatures: the
// rows it looks up and the network's activations), and at most
// MaxInFlight requests are read and scored at a time; beyond that a
// request is refused at once (HTTP 503 with Retry-After, gRPC
// RESOURCE_EXHAUSTED) without its body being read. The defaults pass
// every request of the project's data and the README's examples with 10x
// headroom (a user of the generated CTR data has about 30 user features
// and at most a few hundred samples; a DIN/DIEN history at most 100
// tokens).
type Limits struct {
	// MaxBodyBytes bounds an HTTP request's body: one announced larger
	// (Content-Length) is answered 413 before it is read, one that grows
	// larger while read is answered 413 too. The default value is 1 MiB
	// (the largest request of the project's data, 150 candidates, is
	// about 30 KB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxUserFeatures bounds the user's features of a request. The
	// default value is 4096.
	MaxUserFeatures int `yaml:"max_user_features"`
	// MaxCandidates bounds a request's candidates, at most
	// maxCandidates (4096). The default value is 2048.
	MaxCandidates int `yaml:"max_candidates"`
	// MaxCandidateFeatures bounds the features of one candidate. The
	// default value is 1024.
	MaxCandidateFeatures int `yaml:"max_candidate_features"`
	// MaxFeatures bounds the features of a whole request, the user's and
	// every candidate's. The default value is 65536.
	MaxFeatures int `yaml:"max_features"`
	// MaxInFlight bounds the requests read and scored at once (HTTP and
	// gRPC together); beyond it, a quarter as many places (at least 2)
	// are kept for HTTP requests whose body is announced at 64 KiB or
	// less, so that a flood of large requests does not shut out the
	// ordinary ones. The default value is 4 x GOMAXPROCS, at least 8.
	MaxInFlight int `yaml:"max_in_flight"`
}

// EnsureDefaults fills zero fields with their default values.
func (l *Limits) EnsureDefaults() {
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = 1 << 20
	}
	if l.MaxUserFeatures == 0 {
		l.MaxUserFeatures = 4096
	}
	if l.MaxCandidates == 0 {
		l.MaxCandidates = 2048
	}
	if l.MaxCandidateFeatures == 0 {
		l.MaxCandidateFeatures = 1024
	}
	if l.MaxFeatures == 0 {
		l.MaxFeatures = 65536
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = max(8, 4*runtime.GOMAXPROCS(0))
	}
}

// over returns l with its zero fields taken from d.
func (l Limits) over(d Limits) Limits {
	for _, f := range []struct{ v, d *int }{{&l.MaxUserFeatures, &d.MaxUserFeatures}, {&l.MaxCandidates, &d.MaxCandidates},
		{&l.MaxCandidateFeatures, &d.MaxCandidateFeatures}, {&l.MaxFeatures, &d.MaxFeatures}, {&l.MaxInFlight, &d.MaxInFlight}} {
		if *f.v == 0 {
			*f.v = *f.d
		}
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	return l
}

// BindFlags defines on fs the serve binary's flags that set l, with the
// defaults as their defaults: -max-body-bytes, -max-user-features,
// -max-candidates, -max-candidate-features, -max-features and
// -max-in-flight.
func (l *Limits) BindFlags(fs *flag.FlagSet) {
	var d Limits
	d.EnsureDefaults()
	fs.Int64Var(&l.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "largest request body: a larger one is answered 413, before it is read when announced")
	fs.IntVar(&l.MaxUserFeatures, "max-user-features", d.MaxUserFeatures, "most user features of a request (more: 400)")
	fs.IntVar(&l.MaxCandidates, "max-candidates", d.MaxCandidates, "most candidates of a request, at most 4096 (more: 400)")
	fs.IntVar(&l.MaxCandidateFeatures, "max-candidate-features", d.MaxCandidateFeatures, "most features of one candidate (more: 400)")
	fs.IntVar(&l.MaxFeatures, "max-features", d.MaxFeatures, "most features of a request, the user's and every candidate's (more: 400)")
	fs.IntVar(&l.MaxInFlight, "max-in-flight", d.MaxInFlight, "most requests read and scored at once; beyond, 503 with Retry-After (gRPC: RESOURCE_EXHAUSTED)")
}

// Validate reports every problem with the limits at once. Call
// EnsureDefaults first: New does.
func (l *Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxBodyBytes", l.MaxBodyBytes}, {"MaxUserFeatures", int64(l.MaxUserFeatures)},
		{"MaxCandidates", int64(l.MaxCandidates)}, {"MaxCandidateFeatures", int64(l.MaxCandidateFeatures)},
		{"MaxFeatures", int64(l.MaxFeatures)}, {"MaxInFlight", int64(l.MaxInFlight)},
	} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("serve: limit %s %d is negative", f.name, f.v))
		}
	}
	if l.MaxCandidates > maxCandidates {
		errs = append(errs, fmt.Errorf("serve: limit MaxCandidates %d is above %d, a request's batch", l.MaxCandidates, maxCandidates))
	}
	return errors.Join(errs...)
}

// ErrOverloaded is returned when MaxInFlight requests are being served
// already: the request is refused without being read.
var ErrOverloaded = errors.New("serve: too many requests in flight")

// smallBody is the largest body announced (Content-Length) that may take
// one of the places kept for small requests when MaxInFlight are taken:
// a flood of large requests (each read and parsed up to a limit) then
// does not shut out the ordinary ones, a few KB each.
const smallBody = 64 << 10

// smallPlaces is how many places are kept for small requests beyond
// MaxInFlight: a quarter of MaxInFlight, at least 2. They add at most
// smallPlaces x smallBody of bodies to the bound on memory.
func smallPlaces(maxInFlight int) int { return max(2, maxInFlight/4) }

// acquire takes a place among the requests in flight for a request whose
// body is size bytes (-1: unknown), and returns the func that gives it
// back, or nil when all MaxInFlight places are taken and, for a small
// request (size known, at most smallBody), all the small ones too.
func (s *Server) acquire(size int64) func() {
	select {
	case s.inFlight <- struct{}{}:
		return func() { <-s.inFlight }
	default:
	}
	if size < 0 || size > smallBody {
		return nil
	}
	select {
	case s.small <- struct{}{}:
		return func() { <-s.small }
	default:
		return nil
	}
}

// checkCounts refuses a request with more candidates than the limits
// allow; the features are counted as they are parsed (requestBuild).
func (l *Limits) checkCounts(req *Request) error {
	if n := len(req.Candidates); n == 0 || n > l.MaxCandidates {
		return fmt.Errorf("%w: %d candidates, want 1 to %d", ErrBadRequest, n, l.MaxCandidates)
	}
	return nil
}

// decodeRequest decodes the JSON of one Request from r, strictly: an
// object with the string "user" and the array of strings "candidates",
// each at most once, no other key, no null, nothing after the object.
// Package json alone would read null as "", keep the last of duplicate
// keys and ignore trailing bytes. It reads the body whole (r bounds it:
// http.MaxBytesReader) into one buffer, and the request's strings are
// views of it, those with escapes or non-ASCII bytes aside
// (decoded by package json): a request of 150 candidates costs a few
// allocations, where json.Decoder's tokens cost one or more a value.
//
// size is the body's announced length (-1: unknown), read into one buffer
// of that size when given.
func decodeRequest(r io.Reader, size int64) (*Request, error) {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + 1) // + 1: the read that finds the end
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	if len(b) == 0 {
		return nil, errors.New("an empty body")
	}
	// The request's strings alias b, which is never written again.
	p := reqParser{s: unsafe.String(&b[0], len(b))}
	return p.request()
}

// reqParser reads a Request from s at i.
type reqParser struct {
	s string
	i int
}

func (p *reqParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// want skips blanks and the byte c, or fails naming what is there.
func (p *reqParser) want(c byte) error {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return nil
	}
	return fmt.Errorf("want %q, got %s", rune(c), p.what())
}

// what names the value at i in an error.
func (p *reqParser) what() string {
	if p.i >= len(p.s) {
		return "the end"
	}
	switch c := p.s[p.i]; {
	case c == 'n':
		return "null"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == '{' || c == '[' || c == '}' || c == ']' || c == ',' || c == ':':
		return fmt.Sprintf("%q", rune(c))
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return fmt.Sprintf("the byte %q", p.s[p.i])
}

// str reads a string, naming it name (name[idx] when idx >= 0) in an
// error.
func (p *reqParser) str(name string, idx int) (string, error) {
	what := func() string {
		if idx < 0 {
			return name
		}
		return fmt.Sprintf("%s[%d]", name, idx)
	}
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", fmt.Errorf("%s: want a string, got %s", what(), p.what())
	}
	start := p.i + 1
	plain := true // no escape, no control or non-ASCII byte
	for j := start; j < len(p.s); j++ {
		switch c := p.s[j]; {
		case c == '"':
			p.i = j + 1
			if plain {
				return p.s[start:j], nil
			}
			var out string
			if err := json.Unmarshal([]byte(p.s[start-1:j+1]), &out); err != nil {
				return "", fmt.Errorf("%s: %w", what(), err)
			}
			return out, nil
		case c == '\\':
			plain = false
			j++ // the escaped byte is no end
		case c < 0x20 || c >= 0x80:
			plain = false
		}
	}
	return "", fmt.Errorf("%s: an unterminated string", what())
}

// request reads the whole of s as a Request.
func (p *reqParser) request() (*Request, error) {
	if err := p.want('{'); err != nil {
		return nil, err
	}
	var req Request
	var seenUser, seenCands bool
	p.ws()
	for first := true; p.i >= len(p.s) || p.s[p.i] != '}'; first = false {
		if !first {
			if err := p.want(','); err != nil {
				return nil, err
			}
		}
		key, err := p.str("a key", -1)
		if err != nil {
			return nil, err
		}
		if err := p.want(':'); err != nil {
			return nil, err
		}
		switch key {
		case "user":
			if seenUser {
				return nil, fmt.Errorf("key %q given twice", key)
			}
			seenUser = true
			if req.User, err = p.str("user", -1); err != nil {
				return nil, err
			}
		case "candidates":
			if seenCands {
				return nil, fmt.Errorf("key %q given twice", key)
			}
			seenCands = true
			if req.Candidates, err = p.strings(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown key %q (want user and candidates)", key)
		}
		p.ws()
	}
	p.i++ // '}'
	if !seenCands {
		return nil, errors.New(`no "candidates"`)
	}
	if p.ws(); p.i != len(p.s) {
		return nil, errors.New("bytes after the request's object")
	}
	return &req, nil
}

// strings reads the array of candidates.
func (p *reqParser) strings() ([]string, error) {
	if err := p.want('['); err != nil {
		return nil, fmt.Errorf("candidates: %w", err)
	}
	var out []string
	if p.ws(); p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return out, nil
	}
	for {
		c, err := p.str("candidates", len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if p.ws(); p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return out, nil
		}
		if err := p.want(','); err != nil {
			return nil, fmt.Errorf("candidates: %w", err)
		}
	}
}

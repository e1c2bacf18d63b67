package serve

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
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
// allow; the features are counted as they are parsed (buildGroup).
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
// keys and ignore trailing bytes.
func decodeRequest(r io.Reader) (*Request, error) {
	dec := json.NewDecoder(r)
	want := func(d json.Delim) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok != d {
			return fmt.Errorf("want %s, got %s", describeToken(d), describeToken(tok))
		}
		return nil
	}
	if err := want('{'); err != nil {
		return nil, err
	}
	var req Request
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, fmt.Errorf("key %q given twice", key)
		}
		seen[key] = true
		switch key {
		case "user":
			if req.User, err = stringToken(dec, "user"); err != nil {
				return nil, err
			}
		case "candidates":
			if err := want('['); err != nil {
				return nil, fmt.Errorf("candidates: %w", err)
			}
			for dec.More() {
				c, err := stringToken(dec, fmt.Sprintf("candidates[%d]", len(req.Candidates)))
				if err != nil {
					return nil, err
				}
				req.Candidates = append(req.Candidates, c)
			}
			if err := want(']'); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unknown key %q (want user and candidates)", key)
		}
	}
	if err := want('}'); err != nil {
		return nil, err
	}
	if !seen["candidates"] {
		return nil, errors.New(`no "candidates"`)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("bytes after the request's object")
	}
	return &req, nil
}

// stringToken reads the next token of dec, which must be a string.
func stringToken(dec *json.Decoder, what string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a string, got %s", what, describeToken(tok))
	}
	return s, nil
}

// describeToken names a JSON token in an error.
func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return fmt.Sprintf("%q", rune(t))
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

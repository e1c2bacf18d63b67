package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// decodeRequestReference is the strict decoder decodeRequest replaced
// (json.Decoder's tokens), kept as the reference FuzzDecodeRequest holds
// it to: it decodes the JSON of one Request from r, strictly: an
// object with the string "user" and the array of strings "candidates",
// each at most once, no other key, no null, nothing after the object.
// Package json alone would read null as "", keep the last of duplicate
// keys and ignore trailing bytes.
func decodeRequestReference(r io.Reader) (*Request, error) {
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
			if req.User, err = stringTokenReference(dec, "user"); err != nil {
				return nil, err
			}
		case "candidates":
			if err := want('['); err != nil {
				return nil, fmt.Errorf("candidates: %w", err)
			}
			for dec.More() {
				c, err := stringTokenReference(dec, fmt.Sprintf("candidates[%d]", len(req.Candidates)))
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

// stringTokenReference reads the next token of dec, which must be a string.
func stringTokenReference(dec *json.Decoder, what string) (string, error) {
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

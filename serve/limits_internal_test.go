package serve

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodeRequest: the strict request decoder never panics, and what it
// accepts is what package json reads the same bytes as, with a
// candidates key and no null, duplicate or unknown key, and nothing after
// the object; its re-encoding decodes back to it.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"user": "0:u42 1:ios", "candidates": ["2:item7 3:cat1", "2:item9 3:cat4"]}`,
		`{"candidates": ["1:a"]}`, `{"user": null, "candidates": [null]}`, `{"user": "a", "user": "b", "candidates": []}`,
		`{"candidates": ["1:a"]} x`, `[]`, `{"candidates": {"a": 1}}`, `{"candidates": ["\u00e9:\ud83d\ude00"]}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeRequest(bytes.NewReader(b))
		if err != nil {
			return
		}
		var loose Request
		if err := json.Unmarshal(b, &loose); err != nil {
			t.Fatalf("accepted %q, which package json refuses: %v", b, err)
		}
		if loose.User != req.User || len(loose.Candidates) != len(req.Candidates) {
			t.Fatalf("accepted %q as %+v; package json reads %+v", b, req, loose)
		}
		if req.Candidates == nil {
			req.Candidates = []string{} // "candidates": [] (json would write null, which is refused)
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeRequest(bytes.NewReader(again))
		if err != nil || !reflect.DeepEqual(back.Candidates, req.Candidates) && len(req.Candidates) > 0 || back.User != req.User {
			t.Fatalf("%q re-encoded as %s decodes to %+v, %v", b, again, back, err)
		}
	})
}

package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The pieces a tree of numbered, manifest-last directories is made of,
// for snapshots (this package) and model exports (package export): the
// directory names, and the manifest as a checksummed JSON file.

// SeqDir returns the directory of sequence number seq under prefix:
// prefix and seq in 20 digits, so that names sort as the numbers do.
func SeqDir(prefix string, seq uint64) string { return fmt.Sprintf("%s%020d", prefix, seq) }

// parseSeqDir returns the sequence number of a directory name SeqDir gave
// with prefix.
func parseSeqDir(prefix, name string) (uint64, bool) {
	s, ok := strings.CutPrefix(name, prefix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// SeqDirs returns the sequence numbers of the directories of s's root
// named by SeqDir with prefix, in increasing order.
func SeqDirs(s Store, prefix string) ([]uint64, error) {
	ents, err := s.List("")
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range ents {
		if seq, ok := parseSeqDir(prefix, e.Name); ok && e.Dir {
			out = append(out, seq)
		}
	}
	slices.Sort(out)
	return out, nil
}

// JSONSum returns the hex SHA-256 of v's JSON (json.Marshal): a
// manifest's checksum, of the manifest with its checksum field empty.
func JSONSum(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// CommitJSON writes v, indented for people, as file name of s: the file
// appears whole or not at all (invariant 1).
func CommitJSON(s Store, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	w, err := s.Create(name)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(append(b, '\n')); err != nil {
		return err
	}
	return w.Commit()
}

// ReadJSON reads file name of s into v, refusing unknown fields.
func ReadJSON(s Store, name string, v any) error {
	r, err := s.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// CompactJSON removes the layout whitespace of embedded JSON that
// CommitJSON indented, so that it reads back as it was given (a
// checksum does not depend on it: json.Marshal compacts embedded JSON
// too).
func CompactJSON(r *json.RawMessage) {
	var b bytes.Buffer
	if len(*r) > 0 && json.Compact(&b, *r) == nil {
		*r = b.Bytes()
	}
}

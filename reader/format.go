package reader

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/xdlgo/xps/model/hashmix"
)

// Format is a sample text format.
type Format int

const (
	// LibFM is "label token:value ..." with the field given by position.
	// It also reads libSVM files.
	LibFM Format = iota + 1
	// LibFFM is "label field:token:value ...".
	LibFFM
	// SampleGroup is the multi-level sample-group format ("group L" headers
	// and "level parent labels features..." lines); see the package
	// documentation. (The name Group is taken by the Group type.)
	SampleGroup
	// XML is the XMLRepository multi-label format: a header "N F L", then
	// "l1,l2,... index:value ..." lines.
	XML
	// Criteo is the Criteo display-advertising TSV layout: a label, 13
	// integer and 26 categorical tab-separated columns.
	Criteo
	// Parquet is Parquet files, their columns mapped to the label and
	// fields by a ColumnMap. It is not a text format: package
	// reader/parquetsrc reads it, and NewDecoder refuses it.
	Parquet
)

// String returns the format's name as accepted by ParseFormat.
func (f Format) String() string {
	switch f {
	case LibFM:
		return "libfm"
	case LibFFM:
		return "libffm"
	case SampleGroup:
		return "group"
	case XML:
		return "xml"
	case Criteo:
		return "criteo"
	case Parquet:
		return "parquet"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

func (f Format) valid() bool { return f >= LibFM && f <= Parquet }

// lineFormat reports whether f is one of the formats of Parser and Read
// (libFM and libFFM); the others are read through a Decoder.
func (f Format) lineFormat() bool { return f == LibFM || f == LibFFM }

// ParseFormat returns the format named s, case-insensitively: "libfm" (or
// its alias "libsvm"), "libffm", "group", "xml" (or its alias "xmlrepo"),
// "criteo" or "parquet".
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "libfm", "libsvm":
		return LibFM, nil
	case "libffm":
		return LibFFM, nil
	case "group":
		return SampleGroup, nil
	case "xml", "xmlrepo":
		return XML, nil
	case "criteo":
		return Criteo, nil
	case "parquet":
		return Parquet, nil
	}
	return 0, fmt.Errorf("reader: unknown format %q (want %s)", s, formatNames)
}

// formatNames lists the names ParseFormat accepts, for error messages.
const formatNames = "libfm, libsvm, libffm, group, xml, xmlrepo, criteo or parquet"

// MarshalText implements encoding.TextMarshaler.
func (f Format) MarshalText() ([]byte, error) {
	if !f.valid() {
		return nil, fmt.Errorf("reader: invalid format %d", int(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler using ParseFormat.
func (f *Format) UnmarshalText(b []byte) error {
	v, err := ParseFormat(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// MaxField bounds the field numbers a line may use: fields are < MaxField.
// In libFM it bounds the number of features of a line.
const MaxField = 1 << 20

// FNV-1a 64 parameters.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// FeatureID returns the id of the feature with the given token in field:
// FNV-1a 64 over the 4 little-endian bytes of field then the token bytes,
// finished with the splitmix64 finalizer. It is part of the data format and
// never changes; see the package documentation. The token is bytes or a
// string (the same id for the same bytes), so that a caller holding a
// string hashes it without a copy.
func FeatureID[T ~string | ~[]byte](field uint32, token T) uint64 {
	h := hashField(field)
	for i := 0; i < len(token); i++ {
		h ^= uint64(token[i])
		h *= fnvPrime64
	}
	return hashmix.Mix64(h)
}

// hashField returns the FNV-1a state after the 4 bytes of field.
func hashField(field uint32) uint64 {
	h := uint64(fnvOffset64)
	h ^= uint64(field & 0xff)
	h *= fnvPrime64
	h ^= uint64(field >> 8 & 0xff)
	h *= fnvPrime64
	h ^= uint64(field >> 16 & 0xff)
	h *= fnvPrime64
	h ^= uint64(field >> 24)
	h *= fnvPrime64
	return h
}

package reader

import (
	"bytes"
	"fmt"
)

// ErrMalformedMessage is wrapped by DecodeMessage's errors. It wraps
// ErrMalformed, so errors.Is(err, ErrMalformed) holds for them too.
var ErrMalformedMessage error = malformedMessage{}

type malformedMessage struct{}

func (malformedMessage) Error() string { return "malformed message" }
func (malformedMessage) Unwrap() error { return ErrMalformed }

// DecodeMessage decodes data, the payload of one message of a stream (a
// Kafka record, say), as exactly one group with dec: one sample line of a
// line format, or one sample group of a multi-line format. Lines are split
// as in files (LF or CRLF; blank and '#' lines skipped); header lines are
// not recognised. An error wraps ErrMalformedMessage and names the line
// within the message; g is then in an unspecified state. A message that
// starts with the magic bytes of Parquet or gzip is reported as such.
func DecodeMessage(dec Decoder, data []byte, g *Group) error {
	if err := decodeMessage(dec, data, g); err != nil {
		if why := binaryInput("the message", data); why != "" {
			return fmt.Errorf("%w: %s", ErrMalformedMessage, why)
		}
		return err
	}
	return nil
}

func decodeMessage(dec Decoder, data []byte, g *Group) error {
	lineNo, started := 0, false
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		lineNo++
		line = trimCR(line)
		if i := skipBlank(line, 0); i == len(line) || line[i] == '#' {
			continue
		}
		if len(line) > MaxLineBytes {
			return fmt.Errorf("%w: line %d is longer than %d bytes", ErrMalformedMessage, lineNo, MaxLineBytes)
		}
		starts := dec.Starts(line)
		switch {
		case !started && !starts:
			return fmt.Errorf("%w: line %d does not start a sample group", ErrMalformedMessage, lineNo)
		case started && starts:
			return fmt.Errorf("%w: line %d starts a second sample group (one message holds one group)", ErrMalformedMessage, lineNo)
		}
		started = true
		if err := dec.Decode(line, g); err != nil {
			return fmt.Errorf("%w: line %d: %s", ErrMalformedMessage, lineNo, withBinaryNote(reasonOf(err).Error(), line))
		}
	}
	if !started {
		return fmt.Errorf("%w: no sample", ErrMalformedMessage)
	}
	if err := dec.End(g); err != nil {
		return fmt.Errorf("%w: %s", ErrMalformedMessage, reasonOf(err).Error())
	}
	if len(g.Levels) == 0 || g.NumSamples() == 0 {
		return fmt.Errorf("%w: group without samples", ErrMalformedMessage)
	}
	return nil
}

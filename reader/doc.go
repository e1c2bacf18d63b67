// Package reader defines the training sample, the columnar Dataset that holds
// many samples, and the libFM/libSVM and libFFM text formats.
//
// # Samples
//
// A sample is a label (0 = no click, 1 = click) and a list of features. A
// feature is a (field, id, value) triple: the field says which embedding
// group the feature pools into, the id is a 64-bit hashed feature id and the
// value scales its embedding row (1 for plain one-hot features).
//
// A Dataset stores samples column by column (compressed sparse rows), so that
// millions of samples cost a handful of pointer-free slices. Its invariants:
//
//  1. len(Offsets) == Len()+1, Offsets[0] == 0 and Offsets is non-decreasing.
//  2. len(Labels) == Len(); len(Fields) == len(IDs) == len(Values) ==
//     Offsets[Len()].
//  3. The features of sample i are Fields/IDs/Values[Offsets[i]:Offsets[i+1]],
//     in the order they appeared in the input line.
//  4. NumFields is 1 + the largest field of any feature (0 when there is none).
//
// Dataset.Sample returns views into the Dataset, not copies; their capacity
// is clipped so that appending to them never overwrites a neighbour.
//
// # Formats
//
// Both formats are line oriented; fields of a line are separated by runs of
// spaces and tabs. A trailing "\n" or "\r\n" is ignored. A line that is empty,
// holds only spaces and tabs, or whose first non-blank byte is '#' is not a
// sample: ParseLine reports it with ErrEmptyLine and Read skips it silently.
//
// The first token is the label, any number accepted by strconv.ParseFloat that
// is finite: 1, +1, 0, -1, 0.7 ... The stored label is 1 if the number is > 0
// and 0 otherwise. A line holding only a label is a valid sample with zero
// features.
//
// libFM / libSVM (Format LibFM):
//
//	label token:value token:value ...
//
// The field of a pair is its position on the line, counted from 0 (the
// first pair after the label is field 0). This matches files such as the
// Frappe and MovieLens libFM exports, where every line lists one feature per
// field in a fixed order. The token is any non-empty byte string without ':'.
//
// libFFM (Format LibFFM):
//
//	label field:token:value field:token:value ...
//
// The field is a decimal integer in [0, MaxField); the token is any non-empty
// byte string without ':'.
//
// In both formats the value is a number accepted by strconv.ParseFloat with
// bitSize 32 whose float32 is finite (NaN, Inf and overflow are rejected; an
// underflow to zero is accepted). Common short decimals ("1", "0.25") are
// parsed by a fast path that gives the same float32 as strconv.
//
// # Feature ids
//
// The id of a feature is FeatureID(field, token): the 64-bit FNV-1a hash of
// the 4 little-endian bytes of the field followed by the bytes of the token,
// then passed through the splitmix64 finalizer:
//
//	h := 14695981039346656037                     // FNV-1a 64 offset basis
//	for each byte c of (field as 4 bytes LE) ++ token:
//	    h ^= c; h *= 1099511628211                // FNV-1a 64 prime
//	h ^= h >> 30; h *= 0xbf58476d1ce4e5b9
//	h ^= h >> 27; h *= 0x94d049bb133111eb
//	h ^= h >> 31
//
// The token is hashed as written ("007" and "7" are different features). The
// same token in two fields gives two unrelated ids. This function is part of
// the data and model format: embedding tables, snapshots and exported models
// are keyed by these ids, so it must never change. For example
// FeatureID(0, "1") == 0xb62d47a677df3c59 (see TestFeatureIDGolden).
//
// WriteLibFFM writes each id as its decimal token; reading such a file hashes
// those tokens again, so ids are renamed consistently (one new id per
// (field, old id)), while labels, fields and values are kept.
//
// # Errors
//
// A malformed line gives a *LineError naming the source, the 1-based
// physical line number and the reason; it wraps ErrMalformed, so callers test
// errors.Is(err, ErrMalformed). Lines longer than MaxLineBytes are malformed
// too. No input makes the parser panic.
//
// ReadOptions.OnError chooses what Read does with a malformed line:
// StopOnBad (the default) returns the first one as the error together with the
// samples read before it; SkipBad counts it in ReadStats.Skipped, keeps the
// first few errors in ReadStats.Errors and goes on. StopOnBad is the default
// because a file in the wrong format would otherwise be "read" as zero samples
// and millions of skipped lines.
//
// # Splitting a file between workers
//
// With ReadOptions.Stride = S and Index = k, a reader takes the physical lines
// k, k+S, k+2S, ... (0-based), counting every line of the input including
// empty lines and comments. Counting physical lines, not samples, lets each
// worker decide ownership without parsing the lines of others, and makes the
// split a pure function of the file's bytes: S workers with Index 0..S-1
// together read every sample exactly once.
package reader

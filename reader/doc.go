// Package reader defines the training sample, the columnar Dataset that holds
// many samples, sample groups (Group), and the text formats: libFM/libSVM,
// libFFM, the multi-level sample-group format, XMLRepository multi-label and
// Criteo TSV.
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
// # Decoders
//
// NewDecoder(f) returns the Decoder of format f, which turns the lines of a
// file into Groups for a Source (see Decoder for the protocol: Header on the
// first line, Starts, Decode, End). libFM/libSVM, libFFM, XMLRepository and
// Criteo hold one sample per line: each line is a group of one level and one
// line (Decode calls g.Reset(1), g.AddLine(0, 0, ...) and g.AddLabels), so
// Starts is always true and End checks nothing. libFM/libSVM and libFFM
// decode exactly as Parser.ParseLine (labels binarized to 0/1) and have no
// header. Decoders strip one trailing '\r', return plain errors naming the
// reason (the Source wraps them in a *LineError), never panic, and allocate
// nothing per line once their scratch buffers have grown.
//
// # Sample-group format
//
// The sample-group format (Format SampleGroup, named "group") writes one
// Group as a header line and one line per feature line, in the XDL manner:
// level 0 holds the samples, upper levels hold the lines they share (a user,
// an ad, ...). Tokens are separated by runs of spaces and tabs. Example
// (MovieLens-style, level 1 = user, level 0 = the items the user rated):
//
//	group 2
//	1 - - 0:u196 1:age49 2:M 3:writer 4:55105
//	0 0 1 5:i242 6:Comedy
//	0 0 0 5:i302 6:Crime 6:Film-Noir 7=0.25,1.5
//
// A group starts with the header "group L", L the number of levels, an
// integer in [1, MaxLevels]; Starts is true exactly for lines whose first
// token is "group". The format has no file header. Each following line, up
// to the next header, is "level parent labels feature feature ...":
//
//   - level is an integer in [0, L).
//   - parent is "-" for the top level L-1; on a lower level it is the 0-based
//     index of the parent among the lines of level+1 given so far in this
//     group, which must already exist.
//   - labels, on level 0, are comma-separated finite float32 numbers ("1",
//     "0", "0.5,1,3") stored as given (not binarized), or "-" for a sample
//     without labels; on upper levels they must be "-".
//   - a sparse feature is "field:token" or "field:token:weight", with field a
//     decimal integer in [0, MaxField), token non-empty bytes without ':' or
//     '=', and weight a finite float32 (parsed as a libFFM value), default 1;
//     its id is FeatureID(field, token).
//   - a dense feature is "field=v1,v2,..." with at least one finite float32
//     value (stored with Group.AddDense).
//
// Lines of different levels may come in any order as long as every parent
// comes before its children; the level-0 lines are the samples, in order,
// and the lines of each level keep their order. A group must hold at least
// one sample (End checks it). A line before any header is malformed ("line
// outside a group: missing `group L` header"); a malformed line leaves the
// group as it was.
//
// WriteGroup writes a Group in this format, the top level first. It writes
// each sparse id as its decimal token, so reading the output renames ids
// consistently (one new id per (field, id)) while keeping levels, parents,
// labels, fields, values and dense features, as WriteLibFFM does.
//
// # XMLRepository format
//
// Format XML ("xml" or "xmlrepo") reads the extreme multi-label files of the
// XMLRepository (Bibtex, Amazon-670K, ...). The first line of a file is the
// header "N F L": three non-negative integers, the numbers of samples,
// features and labels (N is not checked). A file whose first line is not such
// a header is malformed. Every other line is
//
//	l1,l2,... index:value index:value ...
//
// The label list is comma-separated non-negative integers, each at most 2^24
// (float32 holds them exactly) and below L; all are kept, in order, as the
// sample's labels. It may be empty: the line then starts with a space or tab.
// Features are "index:value" with index a decimal integer below F and value
// as in libFM; the field is 0 and the id is FeatureID(0, index as written).
// Header resets the bounds for each file; a Source must not split such files
// (a split starting inside a file never sees the header).
//
// # Criteo format
//
// Format Criteo ("criteo") reads the Kaggle display-advertising challenge
// layout: one sample per line, exactly 40 columns separated by single tabs:
// the label ("0" or "1"), 13 integer columns I1..I13 and 26 categorical
// columns C1..C26. The unlabelled test file (39 columns) is rejected, the
// error naming the column count. An empty column is a missing value and
// gives no feature; every feature has value 1:
//
//   - integer column Ij (field j-1, 0..12) holds a decimal int64 x,
//     optionally signed. It is discretized as in the competition's winning
//     solution: the token is the decimal of floor(ln(x)^2) (natural log,
//     float64) when x > 2, else the decimal of x ("-1", "0", "1", "2"); the
//     id is FeatureID(j-1, token). Note that 3 gives "1", like 1.
//   - categorical column Cj (field 12+j, 13..38) holds any token (usually 8
//     hex digits), hashed as written: FeatureID(12+j, token).
//
// The format has no header.
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
// A Decoder made with DecoderOptions.Namespace hashes the tokens of a field
// in another field's namespace, FeatureID(Namespace[field], token), so that
// the same token in two fields is one feature: a user's history of items
// (a sequence field) and the candidate item share their embeddings. The
// job's config declares it (model.sequence), and every reader of the job's
// data, trainer and server alike, must decode with the same namespaces.
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
// A reason quotes input bytes Go-escaped (%q: control bytes and invalid
// UTF-8 become \x.. escapes), clipped to a prefix of at most 64 bytes of
// escaped text, so that no message holds raw input bytes. When the rejected
// line is not text (a control byte other than tab and carriage return, DEL,
// or invalid UTF-8) the reason ends with a note saying so. Input that starts
// with the magic bytes of a binary format given by mistake, Parquet ("PAR1")
// or gzip (1f 8b), has that as the reason of every line error instead: Read
// and DecodeMessage look at the start of their input, a FileSource at the
// start of each file it reads from offset 0 (a split with Start > 0 does not
// see it, and gets the note).
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
//
// # File sources
//
// FileSource reads sample groups from text files of an FS: LocalFS (the
// default) or another file system, such as HDFS (package reader/hdfssrc).
// An FS opens, stats, lists and globs names; the source only reads and
// seeks, so every guarantee below holds on any FS. ExpandPathsFS and
// StatFilesFS expand patterns and size files on an FS for Assign.
//
// # File source lines
//
// A FileSource reads its files line by line; a line ends with "\n" or "\r\n",
// and the last line of a file may have no ending. Lines that are empty, hold
// only spaces and tabs, or whose first non-blank byte is '#' are skipped
// before the Decoder sees them (they still count as physical lines and
// bytes). A line longer than MaxLineBytes is malformed and never starts a
// group: it belongs to the group before it.
//
// # File splits
//
// The input is a list of FileSplits, byte ranges of files, read in the order
// given. Splits of one file must appear in increasing order of Start and must
// not overlap. A split {Path, Start, End} owns the groups whose first line
// begins at a byte offset in [Start, End) (End <= 0: up to the end of the
// file). Split boundaries need not fall on lines:
//
//  1. A split with Start > 0 skips the line holding byte Start-1 (so a line
//     beginning exactly at Start is kept), then every line for which
//     Decoder.Starts is false: those belong to a group begun before Start.
//  2. It reads groups while a group's first line begins before End. The last
//     group may run past End; the next split skips it by rule 1.
//  3. A split with Start == 0 calls Decoder.Header with the first line the
//     Decoder would see; lines before the first group (other than a header)
//     are malformed.
//
// Because Decoder.Starts looks at the line only, splits that tile a file,
// [0, s1), [s1, s2), ..., [sk, end), read by any number of sources, yield
// every group of the file exactly once. A split with Start > 0 never sees
// the file's header, so formats with a header (XMLRepository) must be split
// by whole files only (Assign with splittable false).
//
// # Positions
//
// A group returned by Next has Pos = {Path, offset of its first line, Index},
// Line = the physical line number of its first line when the read of the
// file began at offset 0 (otherwise 0, unknown), and Next = the position of
// the group after it, which is also what Position() returns once Next has
// returned the group:
//
//   - {Path, offset of the next group's first line, 0} inside a split;
//   - {next split's Path, next split's Start, 0} when the split has no more
//     groups;
//   - {last split's Path, its End (the file's size when End <= 0), 0} after
//     the last split.
//
// Before the first Next, Position() is FileSourceOptions.Start, or the
// beginning of the first split when Start is the zero Position. A source
// without splits is empty and its Position() is the zero Position.
//
// # Resuming
//
// FileSourceOptions.Start = {File, Offset, Index} resumes a read. It belongs
// to the first split of File with Start <= Offset < End (End <= 0: no
// bound); a position equal to a split's End (End > 0) means that split is
// done and the source starts at the next one. Splits before it are not read.
// A File that has no split, or an Offset outside its splits, is an error
// (ErrBadPosition).
//
//   - Offset equal to the split's Start: the split is read from its
//     beginning by rule 1 above.
//   - Any other Offset must be the first byte of a group's first line, or the
//     file's size (nothing left); NewFileSource checks this and reports
//     "position ... is not at a group boundary" otherwise. If the split
//     starts at 0, the file's header line is read again and passed to
//     Decoder.Header, so that the Decoder knows it.
//
// Index > 0 says that the first Index samples of the group at Offset were
// consumed: the first group returned has Pos.Index = Index. If Index >= the
// group's number of samples, the source skips the group entirely and
// returns the next one. With Index > 0 the first group found must begin at
// Offset, or Next reports ErrBadPosition.
//
// Resuming at a group's Pos (with the number of its samples consumed as
// Index) or at any Position() yields exactly the samples not yet consumed.
//
// # Errors
//
// A malformed group (a line the Decoder rejects, a line too long, a failed
// Decoder.End, a group without samples) gives a *LineError naming the file
// and the 1-based physical line when the read of the file began at offset 0;
// otherwise Line is 0 and the Reason starts with "byte offset N: ". Under
// StopOnBad Next returns it, and every later call returns it again; Position()
// stays at the start of the bad group. Under SkipBad the whole group (up to
// the next line that starts a group) is skipped, counted in
// SourceStats.Skipped and the first 10 such errors are kept in
// SourceStats.Errors. I/O errors name the file and are sticky too. A
// cancelled context is returned by Next as ctx.Err() and is not sticky:
// the source checks the context before each group and a later call goes on.
//
// # Files
//
//   - group.go: Group and Level (a sample group's feature lines by level), Position, Source, SourceStats and Decoder.
//   - format.go: Format (ParseFormat) and FeatureID, a field's token hashed to its ID.
//   - columns.go: ColumnMap, a columnar file's columns mapped to the label and fields (train.columns; read by reader/parquetsrc).
//   - decode.go: NewDecoder and NewDecoderWith (DecoderOptions), a Decoder for each format, and the decoder of libFM and libFFM lines.
//   - groupfmt.go: the sample-group format: its decoder and WriteGroup.
//   - criteo.go: the Criteo display-advertising format's decoder.
//   - xml.go: the XMLRepository format's decoder (extreme classification).
//   - sniff.go: FormatOfName, SniffFormat and SniffFileFS: a file's format from its name or its first line.
//   - message.go: DecodeMessage, a group from one Kafka message.
//   - parse.go: Parser and LineError: a line into a label and features (ErrMalformed).
//   - read.go: ErrorPolicy, ReadOptions, Read and ReadFile into a Dataset, and WriteLibFFM.
//   - dataset.go: Feature and Dataset, flat samples in memory.
//   - fs.go: FS and File, LocalFS (the default), and the walk of a directory's files.
//   - source.go: FileSplit, FileSourceOptions and FileSource: groups read from file splits in order, resumable at a Position.
//   - readall.go: OpenFiles and OpenFilesFS, ReadAll and Digest.
//   - holdout.go: HeldOut and Holdout, the held-out share of a source's groups by their positions (job.holdout).
//   - assign.go: FileInfo, StatFiles and Assign, files and byte ranges divided among workers.
//   - window.go: WindowSource, a shuffle of a stream in bounded memory, window by window.
//   - pack.go: Pack, many groups in a few flat arrays (a worker's data in memory, a shuffle window).
package reader

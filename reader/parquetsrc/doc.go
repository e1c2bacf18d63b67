// Package parquetsrc reads training samples from Parquet files, local or
// on HDFS (any reader.FS), as a reader.Source: the files Spark, Hive and
// pandas write, turned into samples by a reader.ColumnMap (the job
// config's train.columns) without a conversion to text.
//
// # The library
//
// Pages are read with github.com/parquet-go/parquet-go, chosen over
// github.com/apache/arrow-go/v18's parquet package after reading the same
// file (1M rows, 30 columns: 13 nullable int64, 13 nullable strings, 3
// string lists, snappy, dictionary pages) with the low-level column
// readers of both (BenchmarkLibraries): all 30 columns in 0.47 s against
// 1.19 s, 3 of them in 0.06 s against 0.15 s (BENCHMARKS.md). The gap is
// the dictionary: parquet-go gives a dictionary page's entries and the
// data pages' indexes, so a token is hashed once per dictionary entry and
// a row costs a lookup; arrow-go's column readers give every row's value
// decoded. parquet-go also seeks a column chunk to a row (a row range of
// a large row group) and reads pages one at a time, so memory is bounded
// by a page per mapped column. The tests write their files with arrow-go,
// an independent implementation: both list encodings, snappy, zstd and
// none, plain and dictionary pages, data pages v1 and v2, nulls.
//
// # Columns and values
//
// A field's column is a top-level column: a scalar, or a list (the
// standard three-level LIST, or the older two-level one whose repeated
// element is the list's only child). Structs, maps, lists of lists,
// decimals and INT96 are refused. The kinds are reader.ColumnMap's:
//
//   - token: integers as their decimal (unsigned when the logical type
//     says so), strings and byte arrays as written, booleans as "true" or
//     "false", each FeatureID(namespace, token) with value 1, or its
//     element of the weights list;
//   - value: one feature, token the column's name, value the number;
//   - dense: Group.AddDense with the row's numbers;
//   - bucket: the token of the number's bucket.
//
// These are the features the text formats give for the same data: a
// libFFM line "label 0:item:1 1:tag:w ..." and a Parquet row of the same
// values give the same sample, bit for bit (TestSameSamplesAsText). A
// null scalar, a null or empty list, a null element and a NaN give no
// feature (a null weight counts as 1). A null label, a value that is not
// a finite float32, and weights that do not pair with their list's
// elements make the row malformed: a *RowError naming the file, row
// group and row, which stops the source, or under reader.SkipBad is
// counted in Stats().Skipped and left out.
//
// # Splits
//
// A source reads reader.FileSplits, byte ranges, so that reader.Assign
// and the job's shuffled blocks divide Parquet files as they divide text.
// The rows are placed on the file's bytes (layout): row group g covers
// the bytes [base_g, base_g+size_g), size_g its compressed column chunks,
// base_0 = 4 (after "PAR1"), one after another; its k-th of n rows sits
// at base_g + floor(k*size_g/n). A split owns the rows (for sample
// groups: the groups whose first row) sitting in [Start, End). The place
// of a row never decreases with the row, so the rows of a split are
// consecutive and splits that tile a file give each row once; a large
// row group is cut between splits by row ranges.
//
// # Sample groups
//
// With user-level fields (ColumnField.User) a group is a run of
// consecutive rows whose user-level features are equal: level 1 holds
// them once, level 0 a sample a row. A row starts a group when it is the
// file's first, its index is a multiple of MaxGroupRows, or its
// user-level features differ from the row before's: a function of the
// rows alone, so a split starting inside a run skips to the next start,
// and the split before it reads the run to its end, past its own End.
// Without user-level fields every row is a group of one sample.
//
// # Positions
//
// A group's Pos is {File, its first row (0-based, in the file), Index}:
// the row group is the one holding that row. Position() after a group is
// the next group's first row, or {the next split's file, its first row}
// when the split is done, or {the last split's file, the row after its
// last} after it. Resuming at a split's first row reads the split from
// its start (skipping a run begun before it); at another row, the row
// must start a group (reader.ErrBadPosition otherwise). Index > 0 says
// that many samples of the group were consumed, as for reader.FileSource.
//
// # Errors
//
// A file that is not Parquet or has a corrupt footer, and a page that
// does not decode, give errors wrapping ErrCorrupt that name the file
// (and the row group and column); a schema that does not fit the map,
// or that changes between files, gives errors wrapping ErrSchema, every
// problem listed (Check looks at every file's footer before a job
// reads). These errors are sticky; Position() stays at the start of the
// group that failed, so a resumed job trains nothing twice.
//
// # Files
//
//   - source.go: Options, Source and NewSource: splits, the current file.
//   - read.go: Next and resuming: groups from rows, RowError.
//   - assemble.go: a batch of decoded columns turned into rows (each field column by column, then scattered to its rows).
//   - row.go: a row of the batch: its label, features and dense fields.
//   - cursor.go: a leaf column read row by row, a page at a time.
//   - schema.go: the column map bound to a file's schema (ErrSchema).
//   - file.go: opening a file on a reader.FS, Check (ErrCorrupt).
//   - layout.go: rows placed on a file's bytes, for splits.
//   - write.go: TokenWriter, samples of integer tokens written as Parquet (cmd/ctrgen -format parquet), and TokenColumns, the map that reads them.
package parquetsrc

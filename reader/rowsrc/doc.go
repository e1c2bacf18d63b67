// Package rowsrc reads training samples from a row service: a process
// that holds a table of columns in memory (the Python package's
// Job.fit, serving a pandas DataFrame) and answers requests for ranges
// of its rows over a Unix socket. A Source turns the rows into samples
// by a reader.ColumnMap, as package reader/parquetsrc turns a Parquet
// file's, so that no file is written between the two processes.
//
// # Protocol (version 1)
//
// The client (the worker) sends requests, one JSON line each; the
// service answers each with a JSON header line and the binary data it
// announces, in order, on one connection:
//
//	{"table":"train","schema":true}
//	    -> {"version":1,"table":"train","rows":N,"columns":[{"name":..,"type":..,"nullable":..,"dict_len":..,"dict_bytes":..}, ...]}
//	       then for each dict column, in column order: dict_len+1 int64
//	       offsets (the first 0, non-decreasing, the last dict_bytes),
//	       then the entries' dict_bytes bytes (entry k is
//	       bytes[off[k]:off[k+1]])
//	{"table":"train","rows":[FROM,TO]}
//	    -> {"from":FROM,"to":TO}
//	       then for each column, in column order: TO-FROM values, then,
//	       for a nullable column, TO-FROM validity bytes (1 valid, 0 null)
//
// Numbers are little-endian: int64, uint64, int32, float64, float32,
// bool (a byte, 0 or 1) and dict (an int32 code into the column's
// dictionary, -1 for a null). A header with "error" set is a refusal,
// with nothing after it. The client bounds what it accepts (a header
// line of 1 MiB, 4096 columns, dictionaries of 2^28 entries and 2^34
// bytes) and refuses a header that does not answer its request, a
// dictionary offset out of order or a code past the dictionary, naming
// the service (ErrProtocol); each exchange has a timeout.
//
// # Columns and values
//
// The kinds are reader.ColumnMap's, with the features the text formats
// and Parquet give for the same values (so a model fitted from a
// DataFrame serves requests written as libFFM): token hashes integers as
// their decimal, booleans as "true"/"false" and dict entries as their
// bytes, FeatureID(namespace, token) with value 1; value gives the
// column's name as the token and the number as the value; bucket the
// decimal of the number of boundaries at or below the number; dense one
// dense value. The default kind is value for floating-point columns,
// token otherwise. A null (a validity byte 0, a dict code -1, a NaN)
// gives no feature. A null label, and a number that is not a finite
// float32, make the row malformed: a *RowError naming the table and row,
// which stops the source or, under reader.SkipBad, is counted and left
// out. User-level fields and weights (lists) are refused (ErrSchema):
// the service sends scalar columns.
//
// # Positions
//
// A row is a group of one sample at Position{File: "rows:TABLE",
// Offset: row}; Position() is the next row. Parts divide the table's rows
// into equal ranges (a worker of several reads its own), and a source
// resumes at a row of its part. The service must give the same rows for
// the same table every time it is asked (an epoch re-reads the table;
// a resumed job re-reads from its position).
//
// # Files
//
//   - wire.go: the protocol: requests, headers, schema checks, dictionaries, a batch's columns.
//   - plan.go: the column map bound to a schema; a row's features.
//   - source.go: Options, Source: connecting, fetching batches, rows as groups, RowError.
package rowsrc

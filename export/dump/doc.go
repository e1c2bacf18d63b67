// Package dump reads an export chain whole into memory (Load: the newest
// intact full export and the deltas after it, deletions applied, rows
// decoded to float32) and writes it in the dump format (Write), the
// interchange by which tools outside Go (the Python package's
// xps.export.open) read a model without reading Pebble sstables.
//
// # Format (version 1)
//
// A dump is one line of JSON, the header, then the bytes of its arrays,
// one after the other in the header's order, with no padding:
//
//	{"format": "xps-export-dump", "version": 1,
//	 "store": LOCATION, "seq": N, "full": F, "chain": [F, ..., N],
//	 "job": ID, "samples": S, "created": TIME,
//	 "config": {...}, "shape": {...},      the job's config keyed as its YAML file
//	                                       (train.batch_size), the network's ctr.Shape
//	 "network": {...},                     the network as serve builds it (ctr.Spec)
//	 "tables": [{"name": "emb", "dim": 18, "quant": "fp32", "rows": R, "init": {...}}],
//	 "dense": [{"name": "mlp", "len": L}],
//	 "arrays": [{"name": "tables/emb/ids", "dtype": "<u8", "shape": [R]},
//	            {"name": "tables/emb/values", "dtype": "<f4", "shape": [R, 18]},
//	            {"name": "dense/mlp", "dtype": "<f4", "shape": [L]}]}
//
// dtype is numpy's: "<u8" little-endian uint64, "<f4" little-endian
// float32; an array's bytes are its shape's product times the dtype's
// size, rows in C order. A table's rows are in id order, each id once;
// an id without a row reads as the table's init (ams.InitSpec) would make
// it. quant is how the export stored the values (fp16 and int8 are
// decoded here, as serve decodes them). A reader refuses a format or
// version it does not know; fields may be added to the header.
//
// # Invariants
//
//  1. Load applies exactly the chain export.Next gives a reader that
//     holds nothing: what serve would load from the same store; a store
//     without an intact full export is an error wrapping
//     export.ErrNoExport, and nothing is written.
//  2. Write writes the header and then every array in the header's
//     order and sizes, or fails: a reader that counts the header's bytes
//     reads the whole model or gets an error (a short read).
//
// # Files
//
//   - dump.go: Model, Load (each export's files read at once, merged as runs in id order, the deltas merged in) and Write.
package dump

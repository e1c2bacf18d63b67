// Package sparsenet is the sparse half of a CTR model on the worker: it
// deduplicates the feature IDs of a batch per table, pools the pulled
// embedding rows per (sample, field) into the dense input of the MLP, and
// scatters the MLP's input gradient back into one gradient per unique ID.
//
// # Layout
//
// A Layout maps each field to a table; the dense input of a sample is the
// concatenation, in field order, of one pooled vector per field, whose width
// is the dim of the field's table. Pooling is a weighted sum (value x row)
// or a weighted mean over the field's bag. A feature whose field is not in
// the layout is an error at batch-building time, never silently dropped.
//
// # Batches
//
// A Batch is built by Reset and Add (one call per sample) and holds, per
// table, the unique IDs in first-seen order (the order rows are pulled and
// gradients pushed) and, per feature, the index of its unique row. Gradients
// of one ID that appears in several samples or fields are summed, so each
// unique ID is pushed once per batch.
//
// Nothing here does I/O or knows about shards; a Batch and its buffers are
// not safe for concurrent use.
package sparsenet

// Package hashmix holds the 64-bit mixing function shared by the data
// formats (feature IDs), the parameter server (partitions, stripes, index,
// initializers) and the data generator. Its output is part of stored
// formats (feature IDs, virtual partitions, initial rows): it never changes.
// It is on the public model floor because a model's ids are defined by
// it: whatever trains or serves a model outside this module hashes with
// the same function.
//
// # Files
//
//   - hashmix.go: Mix64 (splitmix64's finalizer), Hash3 of three words and Stream, a seeded generator of uint64s, ints and floats.
package hashmix

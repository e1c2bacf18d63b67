package sparsenet

import "github.com/xdlgo/xps/model/prefetch"

// Dedup assigns dense indices 0, 1, 2, ... to distinct uint64 keys in
// first-seen order. It is a pointer-free open-addressing table with
// generation stamps, so Reset is O(1) and steady-state use allocates
// nothing; key, index and stamp of a bucket share one 16-byte entry, so a
// probe touches one cache line. Not safe for concurrent use.
type Dedup struct {
	entries []dedupEntry
	gen     uint32
	mask    uint64
	n       int
	// Keys lists the distinct keys in first-seen order.
	Keys []uint64
}

type dedupEntry struct {
	key uint64
	val int32
	gen uint32 // the entry is live when gen == Dedup.gen
}

// Reset forgets every key, keeping the capacity.
func (d *Dedup) Reset() {
	d.gen++
	if d.gen == 0 { // wrapped: clear the stamps once every 2^32 resets
		for i := range d.entries {
			d.entries[i].gen = 0
		}
		d.gen = 1
	}
	d.n = 0
	d.Keys = d.Keys[:0]
}

func (d *Dedup) grow() {
	size := 2 * len(d.entries)
	if size < 1024 {
		size = 1024
	}
	old := d.Keys
	d.entries = make([]dedupEntry, size)
	d.mask = uint64(size - 1)
	d.gen = 1
	d.n = 0
	d.Keys = d.Keys[:0]
	for _, k := range old {
		d.Index(k)
	}
}

// Index returns the dense index of key, adding it if it is new.
func (d *Dedup) Index(key uint64) int32 {
	if 4*(d.n+1) > 3*len(d.entries) {
		d.grow()
	}
	i := d.home(key)
	for {
		e := &d.entries[i]
		if e.gen != d.gen {
			v := int32(d.n)
			*e = dedupEntry{key: key, val: v, gen: d.gen}
			d.n++
			d.Keys = append(d.Keys, key)
			return v
		}
		if e.key == key {
			return e.val
		}
		i = (i + 1) & d.mask
	}
}

// Lookup returns the dense index of key and true, or false when key was
// not added since the last Reset; it adds nothing.
func (d *Dedup) Lookup(key uint64) (int32, bool) {
	if d.n == 0 {
		return 0, false
	}
	for i := d.home(key); ; i = (i + 1) & d.mask {
		e := &d.entries[i]
		if e.gen != d.gen {
			return 0, false
		}
		if e.key == key {
			return e.val, true
		}
	}
}

// home returns key's home bucket. The table must not be empty.
func (d *Dedup) home(key uint64) uint64 {
	h := key * 0x9E3779B97F4A7C15
	return (h ^ h>>29) & d.mask
}

// Prefetch hints the CPU to load key's home bucket, so that an Index of
// it a little later finds the bucket in cache: a batch's table of a few
// thousand keys outgrows the L1 and L2 caches, and each Index then waits
// on a miss. It changes nothing.
func (d *Dedup) Prefetch(key uint64) {
	if len(d.entries) > 0 {
		prefetch.Of(&d.entries[d.home(key)])
	}
}

// Len returns the number of distinct keys since the last Reset.
func (d *Dedup) Len() int { return d.n }

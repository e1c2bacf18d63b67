package sparsenet

// Dedup assigns dense indices 0, 1, 2, ... to distinct uint64 keys in
// first-seen order. It is a pointer-free open-addressing table with
// generation stamps, so Reset is O(1) and steady-state use allocates
// nothing. Not safe for concurrent use.
type Dedup struct {
	keys []uint64
	vals []int32
	gens []uint32
	gen  uint32
	mask uint64
	n    int
	// Keys lists the distinct keys in first-seen order.
	Keys []uint64
}

// Reset forgets every key, keeping the capacity.
func (d *Dedup) Reset() {
	d.gen++
	if d.gen == 0 { // wrapped: clear the stamps once every 2^32 resets
		for i := range d.gens {
			d.gens[i] = 0
		}
		d.gen = 1
	}
	d.n = 0
	d.Keys = d.Keys[:0]
}

func (d *Dedup) grow() {
	size := 2 * len(d.keys)
	if size < 1024 {
		size = 1024
	}
	old := d.Keys
	d.keys = make([]uint64, size)
	d.vals = make([]int32, size)
	d.gens = make([]uint32, size)
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
	if 4*(d.n+1) > 3*len(d.keys) {
		d.grow()
	}
	h := key * 0x9E3779B97F4A7C15
	i := (h ^ h>>29) & d.mask
	for {
		if d.gens[i] != d.gen {
			d.gens[i] = d.gen
			d.keys[i] = key
			v := int32(d.n)
			d.vals[i] = v
			d.n++
			d.Keys = append(d.Keys, key)
			return v
		}
		if d.keys[i] == key {
			return d.vals[i]
		}
		i = (i + 1) & d.mask
	}
}

// Len returns the number of distinct keys since the last Reset.
func (d *Dedup) Len() int { return d.n }

package slide

import "sync"

// pool runs one function on n goroutines at a time: the caller's (as
// worker 0) and n-1 goroutines that newPool starts and close stops. run
// returns when every worker has finished, which orders all memory accesses
// of one phase before those of the next (the happens-before edges of the
// channel send and of the WaitGroup). A pool is used by one goroutine.
type pool struct {
	n    int
	work []chan func(q int)
	wg   sync.WaitGroup // the current run
	life sync.WaitGroup // the goroutines
}

func newPool(n int) *pool {
	p := &pool{n: n, work: make([]chan func(int), n-1)}
	p.life.Add(n - 1)
	for i := range p.work {
		ch := make(chan func(int))
		p.work[i] = ch
		go func(q int) {
			defer p.life.Done()
			for f := range ch {
				f(q)
				p.wg.Done()
			}
		}(i + 1)
	}
	return p
}

// run calls f(q) for q = 0..n-1 concurrently and waits for all of them.
func (p *pool) run(f func(q int)) {
	p.wg.Add(len(p.work))
	for _, ch := range p.work {
		ch <- f
	}
	f(0)
	p.wg.Wait()
}

// close stops the goroutines and waits for them to exit.
func (p *pool) close() {
	for _, ch := range p.work {
		close(ch)
	}
	p.life.Wait()
}

// span returns the q-th of n near-equal contiguous parts of [0, total).
func span(q, n, total int) (lo, hi int) {
	return q * total / n, (q + 1) * total / n
}

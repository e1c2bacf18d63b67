package dslide

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/xdlgo/xps/sparsenet/slide"
)

// DefaultWait is how long a Worker's request may wait at an owner for the
// other workers before the owner replies Pending and the worker polls
// again (calling Worker.Waiting in between).
const DefaultWait = 200 * time.Millisecond

// Worker is one worker's side of the rounds (see Owner): Peers[o] reaches
// owner o of Part. Its methods are not safe for concurrent use.
type Worker struct {
	Part    Partition
	Peers   []Peer
	Index   int    // this worker's index among the round's workers
	Version uint64 // the attempt's cluster version
	// Wait is each request's wait at an owner (DefaultWait when zero).
	Wait time.Duration
	// Waiting, when set, is called while a round waits for other workers
	// (between polls); an error from it ends the round with that error.
	// A worker uses it to serve what cannot wait for the round's end.
	Waiting func(ctx context.Context) error
	// Dense makes the rounds exchange what dense model parallelism does:
	// every owner sends its logits for this worker's samples (n x its
	// rows) and the worker computes the softmax's sums from them, instead
	// of each owner sending one Partial per sample. The model trained is
	// the same; it is for comparing the bytes and time on the wire.
	Dense bool

	round uint64
	parts [][]slide.Partial
	glob  []slide.Global
	pred  []PredictReply
	pos   []int
	stats Stats
}

// Round returns the number of rounds this worker took part in.
func (w *Worker) Round() uint64 { return w.round }

// Stats returns the balance of the rounds so far (the owners' active
// pairs, as Layer.Stats).
func (w *Worker) Stats() Stats { return w.stats }

// TrainBatch takes part in the next round with n samples (x: n x InputDim,
// labels in [0, Total)); n may be 0 (a worker out of data still takes part
// in every round of the epoch). pause is the pause request this worker
// was asked to serve (0: none; see ForwardRequest). It returns the mean loss over its samples with labels,
// writes its dx (unless nil), and returns the round's RoundInfo. A label
// out of range is an error wrapping slide.ErrBadLabel before anything is
// sent.
func (w *Worker) TrainBatch(ctx context.Context, x []float32, n int, labels [][]int32, dx []float32, pause uint64) (float64, RoundInfo, error) {
	if err := checkLabels(labels, w.Part.Total()); err != nil {
		return 0, RoundInfo{}, err
	}
	W := len(w.Peers)
	if len(w.parts) != W {
		w.parts = make([][]slide.Partial, W)
	}
	wait := w.Wait
	if wait == 0 {
		wait = DefaultWait
	}
	var info RoundInfo
	active := make([]int, W)
	err := w.poll(ctx, func(ctx context.Context, o int, poll bool) (bool, bool, error) {
		req := ForwardRequest{Version: w.Version, Round: w.round, Worker: w.Index, N: n, Pause: pause, Poll: poll, Wait: wait, Dense: w.Dense}
		if !poll {
			req.X, req.Labels = x, labels
		}
		rep, err := w.Peers[o].Forward(ctx, req)
		if err != nil || rep.Pending {
			return rep.Pending, rep.Resend, err
		}
		if w.Dense {
			if len(rep.Logits) != n*w.Part.Rows(o) {
				return false, false, fmt.Errorf("%w: owner %d sent %d logits for %d samples of %d rows", ErrRound, o, len(rep.Logits), n, w.Part.Rows(o))
			}
			rep.Parts = partials(rep.Logits, n, w.Part.Bounds[o], w.Part.Rows(o), labels, make([]slide.Partial, n))
		}
		if len(rep.Parts) != n {
			return false, false, fmt.Errorf("%w: owner %d sent %d Partials for %d samples", ErrRound, o, len(rep.Parts), n)
		}
		w.parts[o], active[o] = rep.Parts, rep.Active
		if o == 0 {
			info = rep.Info
		}
		return false, false, nil
	})
	if err != nil {
		return 0, RoundInfo{}, fmt.Errorf("dslide: round %d, forward: %w", w.round, err)
	}
	w.stats.add(active)
	w.glob = grow(w.glob, n)
	loss, _ := slide.Combine(w.parts, w.glob)
	if dx != nil {
		clear(dx)
	}
	var mu sync.Mutex
	err = w.poll(ctx, func(ctx context.Context, o int, poll bool) (bool, bool, error) {
		req := BackwardRequest{Version: w.Version, Round: w.round, Worker: w.Index, Poll: poll, Wait: wait}
		if !poll {
			req.Globals = w.glob
		}
		rep, err := w.Peers[o].Backward(ctx, req)
		if err != nil || rep.Pending {
			return rep.Pending, rep.Resend, err
		}
		if len(rep.Dx) != len(x) {
			return false, false, fmt.Errorf("%w: owner %d sent %d dx values for %d", ErrRound, o, len(rep.Dx), len(x))
		}
		if dx != nil {
			mu.Lock()
			for i, v := range rep.Dx {
				dx[i] += v
			}
			mu.Unlock()
		}
		return false, false, nil
	})
	if err != nil {
		return 0, RoundInfo{}, fmt.Errorf("dslide: round %d, backward: %w", w.round, err)
	}
	w.round++
	return loss, info, nil
}

// poll runs call for every owner at once with its data (poll false),
// then again for those that replied pending, calling Waiting in between,
// until none is: as a poll when the owner took the data, with the data
// again when it did not (resend).
func (w *Worker) poll(ctx context.Context, call func(ctx context.Context, o int, poll bool) (pending, resend bool, err error)) error {
	W := len(w.Peers)
	pending, taken := make([]bool, W), make([]bool, W)
	errs := make([]error, W)
	todo := make([]int, W)
	for o := range todo {
		todo[o] = o
	}
	for len(todo) > 0 {
		var wg sync.WaitGroup
		for _, o := range todo {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var resend bool
				pending[o], resend, errs[o] = call(ctx, o, taken[o])
				taken[o] = !resend
			}()
		}
		wg.Wait()
		next := todo[:0]
		for _, o := range todo {
			if errs[o] != nil {
				return fmt.Errorf("owner %d: %w", o, errs[o])
			}
			if pending[o] {
				next = append(next, o)
			}
		}
		todo = next
		if len(todo) > 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if w.Waiting != nil {
				if err := w.Waiting(ctx); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Predict writes to out (n x k) the k best rows of the whole layer for
// each input, merged from every owner's top k (Layer.PredictSparse and
// PredictDense); rehash makes every owner rebuild its tables first. It
// must be called between this worker's rounds. With n 0 it only rehashes.
func (w *Worker) Predict(ctx context.Context, x []float32, n, k int, sparse, rehash bool, out []int32) error {
	W := len(w.Peers)
	if len(out) != n*k {
		return fmt.Errorf("dslide: predict: len(out) %d for n %d, k %d", len(out), n, k)
	}
	if len(w.pred) != W {
		w.pred, w.pos = make([]PredictReply, W), make([]int, W)
	}
	err := w.poll(ctx, func(ctx context.Context, o int, _ bool) (bool, bool, error) {
		rep, err := w.Peers[o].Predict(ctx, PredictRequest{Version: w.Version, N: n, K: k, X: x, Sparse: sparse, Rehash: rehash})
		if err != nil || rep.Pending {
			return rep.Pending, true, err
		}
		if len(rep.IDs) != n*k || len(rep.Scores) != n*k {
			err = fmt.Errorf("%w: owner %d sent %d rows and %d scores for %d x %d", ErrRound, o, len(rep.IDs), len(rep.Scores), n, k)
		}
		w.pred[o] = rep
		return false, false, err
	})
	if err != nil {
		return fmt.Errorf("dslide: predict: %w", err)
	}
	if n == 0 {
		return nil
	}
	ids, sc := make([]int32, 0, W*n*k), make([]float32, 0, W*n*k)
	for _, p := range w.pred {
		ids, sc = append(ids, p.IDs...), append(sc, p.Scores...)
	}
	mergeAll(w.Part, ids, sc, n, k, out, w.pos)
	return nil
}

// partials computes from an owner's logits (n x rows, its first row
// first, -Inf where inactive) each sample's Partial, as the owner does
// (slide.Layer.ShardForward): dense model parallelism's worker side.
func partials(logits []float32, n, first, rows int, labels [][]int32, out []slide.Partial) []slide.Partial {
	for i := range n {
		z := logits[i*rows : (i+1)*rows]
		p := slide.Partial{Max: float32(math.Inf(-1))}
		if len(labels[i]) > 0 {
			for _, v := range z {
				p.Max = max(p.Max, v)
			}
			for _, v := range z {
				if !math.IsInf(float64(v), -1) {
					p.Sum += math.Exp(float64(v - p.Max))
				}
			}
			seen := map[int32]bool{}
			for _, l := range labels[i] {
				r := l - int32(first)
				if r >= 0 && int(r) < rows && !seen[r] && !math.IsInf(float64(z[r]), -1) {
					seen[r] = true
					p.Labels++
					p.LabelLogits += float64(z[r])
				}
			}
		}
		if p.Sum == 0 {
			p.Max = float32(math.Inf(-1))
		}
		out[i] = p
	}
	return out
}

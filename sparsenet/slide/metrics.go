package slide

import "fmt"

// PrecisionAtK returns precision@k of ranked predictions: the mean over the
// samples of |{top k predictions} ∩ labels| / k, where sample i's
// predictions are pred[i*stride : i*stride+k] (best first; -1 entries never
// match) and its true labels are labels[i]. A label listed twice counts once.
// It panics unless 1 <= k <= stride and len(pred) == len(labels)*stride; no
// samples give 0.
func PrecisionAtK(pred []int32, stride int, labels [][]int32, k int) float64 {
	var m Precision
	m.Add(pred, stride, labels)
	return m.At(k)
}

// Precision accumulates precision@1..@5 (and up to the prediction width)
// over batches of predictions. The zero value is ready to use.
type Precision struct {
	n     int
	width int       // the narrowest prediction width added
	hits  []float64 // hits[j]: predictions at rank j that were labels, summed
}

// Add adds the predictions of a batch (see PrecisionAtK for the layout).
func (p *Precision) Add(pred []int32, stride int, labels [][]int32) {
	if stride < 1 || len(pred) != len(labels)*stride {
		panic(fmt.Sprintf("slide: Precision.Add: stride %d, %d predictions for %d samples", stride, len(pred), len(labels)))
	}
	if p.width == 0 || stride < p.width {
		p.width = stride
	}
	for len(p.hits) < stride {
		p.hits = append(p.hits, 0)
	}
	for i, ls := range labels {
		row := pred[i*stride : (i+1)*stride]
		for j, id := range row {
			if id >= 0 && seenBefore(ls, id) && !seenBefore(row[:j], id) {
				p.hits[j]++
			}
		}
	}
	p.n += len(labels)
}

// N is the number of samples added.
func (p *Precision) N() int { return p.n }

// At returns precision@k over the samples added, 0 when there are none.
// Otherwise it panics unless 1 <= k <= the narrowest prediction width added.
func (p *Precision) At(k int) float64 {
	if p.n == 0 {
		return 0
	}
	if k < 1 || k > p.width {
		panic(fmt.Sprintf("slide: Precision.At(%d) with predictions of width %d", k, p.width))
	}
	var h float64
	for _, v := range p.hits[:k] {
		h += v
	}
	return h / float64(p.n*k)
}

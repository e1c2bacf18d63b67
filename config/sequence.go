package config

import (
	"slices"

	"github.com/xdlgo/xps/reader"
)

// ensureDefaults fills the history's zero values.
func (s *SequenceConfig) ensureDefaults(kind string) {
	if s.MaxLen == 0 {
		s.MaxLen = 50
	}
	if s.Attention == nil {
		s.Attention = []int{80, 40}
	}
	if s.AuxWeight == nil {
		w := 0.0
		if len(s.Negatives) > 0 && kind == KindDIEN {
			w = 1
		}
		s.AuxWeight = &w
	}
}

// MaxSeqLen bounds model.sequence.max_len (sparsenet.MaxSeqLen).
const MaxSeqLen = 4096

// IsSequence reports whether kind reads the history as sequences (din,
// dien).
func IsSequence(kind string) bool { return kind == KindDIN || kind == KindDIEN }

// validateSequence appends the problems of model.sequence.
func (m *ModelConfig) validateSequence(bad func(string, ...any)) {
	s := &m.Sequence
	if IsSequence(m.Kind) && !s.On() {
		bad("model.kind %s needs a behaviour history: set model.sequence.history and model.sequence.target", m.Kind)
	}
	if IsSequence(m.Kind) && m.HasWide() {
		bad("model.wide with kind %s: the wide part over sequence fields is not supported", m.Kind)
	}
	if !s.On() && (len(s.Target) > 0 || len(s.Negatives) > 0) {
		bad("model.sequence: target or negatives without history")
	}
	if s.On() && len(s.Target) != len(s.History) {
		bad("model.sequence: %d target fields for %d history fields (one candidate field per history field)", len(s.Target), len(s.History))
	}
	if len(s.Negatives) > 0 && len(s.Negatives) != len(s.History) {
		bad("model.sequence: %d negatives fields for %d history fields (aligned)", len(s.Negatives), len(s.History))
	}
	all := slices.Concat(s.History, s.Target, s.Negatives)
	for i, f := range all {
		if f < 0 || f >= reader.MaxField {
			bad("model.sequence: field %d is not in [0, %d)", f, reader.MaxField)
		} else if slices.Contains(all[:i], f) {
			bad("model.sequence: field %d is named twice", f)
		}
	}
	if s.MaxLen < 1 || s.MaxLen > MaxSeqLen {
		bad("model.sequence.max_len %d is not in [1, %d]", s.MaxLen, MaxSeqLen)
	}
	for i, h := range s.Attention {
		if h <= 0 || h > MaxHidden {
			bad("model.sequence.attention[%d] = %d is not in [1, %d]", i, h, MaxHidden)
		}
	}
	if len(s.Attention) > MaxLayers {
		bad("model.sequence.attention lists %d layers, more than %d", len(s.Attention), MaxLayers)
	}
	switch w := *s.AuxWeight; {
	case w < 0 || w > 1e3 || w != w:
		bad("model.sequence.aux_weight %v is not in [0, 1000]", w)
	case w > 0 && len(s.Negatives) == 0:
		bad("model.sequence.aux_weight %v: DIEN's auxiliary loss needs model.sequence.negatives", w)
	case w > 0 && m.Kind != KindDIEN:
		bad("model.sequence.aux_weight %v: the auxiliary loss is DIEN's (kind dien), not %s's", w, m.Kind)
	}
}

package datagen

import "github.com/xdlgo/xps/model/hashmix"

// drift maps a field's Zipf rank to the id that holds it at a time (a
// sample's index in the stream). Without drift (lifetime 0) a rank's token
// is the rank itself, at every time. With drift, rank k of field f is held
// by a sequence of ids, generation after generation: generation
//
//	gen(f, k, t) = (t + phase(f, k)) / lifetime   (integer division)
//
// has token gen*vocab + k, where phase(f, k) in [0, lifetime) is a hash of
// the field, the rank and WorldSeed. Every id is therefore drawn during
// exactly lifetime consecutive samples (the first generation for fewer:
// lifetime - phase) with the popularity of its rank, and never again; the
// phases stagger the replacements, so that about vocab/lifetime ranks of a
// field get a new id per sample, heads and tails alike. Generation 0 has
// the tokens of the undrifted vocabulary.
//
// The teacher gives every generation of a rank the hidden weight and
// factors of the rank's first id (entry.wid): drift renames ids and changes
// nothing else, so a drifting stream has exactly the labels, probabilities
// and Bayes AUC of the undrifted stream of the same Config. (Fresh weights
// per generation would move the CTR, which the bias is calibrated to once:
// the few head ranks carry a large share of the draws, and their new
// weights shift the mean logit. Tried with the defaults and a lifetime of
// 40000 samples, the CTR of successive 40000-sample windows went from 0.13
// to 0.07, for a target of 0.2.) A model cannot carry what it learnt across
// generations: a new id is a new feature hash, whose row starts afresh.
type drift struct {
	lifetime uint64 // samples an id is drawn for; 0: no drift
	vocab    uint64
	key      uint64
}

func newDrift(cfg *Config) drift {
	return drift{lifetime: uint64(cfg.DriftLifetime), vocab: uint64(cfg.Vocab),
		key: hashmix.Mix64(cfg.WorldSeed ^ saltDrift)}
}

// on reports whether the vocabulary drifts.
func (d drift) on() bool { return d.lifetime > 0 }

// token returns the token of the id holding rank in field at time now
// (drift on).
func (d drift) token(field, rank uint32, now uint64) uint64 {
	phase := hashmix.Mix64(d.key^(uint64(field)<<32|uint64(rank))) % d.lifetime
	return (now+phase)/d.lifetime*d.vocab + uint64(rank)
}

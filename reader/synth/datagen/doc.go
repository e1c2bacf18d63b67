// Package datagen generates click-through-rate data shaped like the data of
// the XDL paper, labelled by a hidden "teacher" model that the platform's
// model (sum-pooled embeddings per field feeding an MLP) can learn.
//
// # Shape
//
// A sample has Fields fields (23 by default). Fields 0..UserFields-1 describe
// the user, the others the item (an ad). Every field holds a bag of
// 1 + Poisson(MeanBag-1) distinct ids (3 on average), each the Zipf-
// distributed rank k in [0, Vocab) of a token: P(k) ~ (1+k)^-ZipfS. The
// feature id of rank k in field f is reader.FeatureID(f, decimal(k)) (with
// drift, of the rank's token at the time: see Drift), so a libFFM file
// "label f:k:1 ..." read back with reader.Read gives the same ids. Values
// are 1.
//
// Samples come in runs: a run picks one of Users users uniformly and has a
// geometric length with mean SamplesPerUser (20; XDL's logs repeat a user 57
// times on average). Within a run the user fields are identical, id for id,
// and the item fields are drawn afresh for every sample. A user's fields are
// drawn from a stream seeded by the user and WorldSeed, so a returning user
// has the same profile.
//
// Invariants of the output:
//
//  1. Features are ordered by field; each field has at least one id and no
//     id twice (the bag comes out smaller only when the vocabulary is nearly
//     exhausted).
//  2. Consecutive samples of one run have equal user fields.
//  3. The output is a pure function of the Config: the same Config gives the
//     same samples, labels and probabilities, whether drawn by one call to
//     Generate, by several, or by Write, WriteLibFFM, WriteGroups or
//     NextGroup.
//
// # Teacher
//
// Every feature (field f, rank k, id) has a hidden weight
//
//	w(id, k) = N(id) / sqrt(1 + k/RankScale)
//
// where N(id) is a deterministic, approximately standard normal number
// derived from a hash of the id (with drift, of its rank's first id) and
// WorldSeed (an Irwin-Hall sum of four uniforms). The shrinkage puts the signal in ids popular enough to be
// learned. Each field has a fixed importance r_f in [0.5, 1.5). The features
// of user field 0 and of item field UserFields also have hidden 4-dimensional
// factor vectors (same construction, same shrinkage); U and V are their sums
// over the two bags. The logit and the click probability are
//
//	z = bias + a * sum_f r_f * sum_{ids in bag f} w  +  b * <U, V>
//	p = sigmoid(z); label ~ Bernoulli(p)
//
// The first term is exactly what sum pooling of 1-dimensional embeddings
// computes; the second is a product of two pooled embeddings, which an MLP on
// the concatenated pooled embeddings can approximate. New calibrates a and b
// on a fixed sample of the world so that the logit has standard deviation
// LogitStd with a share InteractionShare of its variance in the interaction,
// and then the bias so that the mean of p is CTR. The teacher depends on
// WorldSeed and the shape parameters but not on Seed: generators with
// different Seeds draw train and test sets from one distribution.
//
// With the defaults the base CTR is about 0.19-0.20 and the Bayes AUC (the
// AUC of the true probabilities) about 0.815, with a Bayes log loss of about
// 0.38. A one-pass, Adagrad-trained model of the platform's shape (per-id
// weights plus one pair of 4-dimensional pooled embeddings) reaches an AUC of
// about 0.775 after 200K samples (TestTeacherIsLearnable), and it keeps
// closing the gap with more data.
//
// # Drift
//
// With Config.DriftLifetime L > 0 the vocabulary drifts, as the ids of
// months of logs do: each Zipf rank k of each field is held by a sequence
// of ids, one per generation, each drawn for L consecutive samples and
// never again. The generations of the ranks are staggered by a phase (a
// hash of field, rank and WorldSeed), so that a field's active vocabulary,
// Vocab ids out of an unbounded id space, advances by about Vocab/L ids
// per sample: distinct ids grow linearly with samples, and as most ranks
// are in the long tail, most new ids are drawn only a few times in their
// life (what admission filters exist for). The token of generation g of
// rank k is g*Vocab + k, so generation 0 is the undrifted vocabulary.
// A user's fields take the ids of their ranks at the start of the user's
// run. The teacher gives every generation of a rank the weight and factors
// of its first id: drift renames ids and changes nothing else, so the
// labels, probabilities, CTR and Bayes AUC are those of the undrifted
// stream of the same Config, and a model has to learn every new id afresh.
// With the defaults and L = 100000, a progressively trained student of the
// platform's shape scores about 0.74 over samples 200K-300K, against about
// 0.78 without drift (TestDriftIsLearnable).
//
// Drift off (L = 0, the default) leaves every output byte for byte as it
// was before drift existed (TestDriftOffIsByteIdentical).
//
// # Writing
//
// Write streams samples to libFFM or sample-group text holding one sample
// at a time, so ctrgen writes tens of millions of samples in constant
// memory (20M drifting samples in the group format: 2m44s and 18 MB of RSS
// on the 2-core development machine); WriteLibFFM and WriteGroups also
// return the probabilities.
//
// A Generator is not safe for concurrent use; give each goroutine its own,
// with its own Seed.
//
// It is one of the synthetic sources under reader/synth (public: a model
// written outside the module can train and be checked on it), beside seqgen and xcgen.
//
// # Files
//
//   - config.go: Config (every field's default), EnsureDefaults, Validate.
//   - generator.go: the teacher, its calibration (New, CalibrateBias), the Generator: Generate, NextGroup, Fork; Normalish.
//   - drift.go: the drifting vocabulary (Config.DriftLifetime).
//   - write.go: Write, WriteLibFFM, WriteGroups: streamed text.
package datagen

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
// feature id of rank k in field f is reader.FeatureID(f, decimal(k)), so a
// libFFM file "label f:k:1 ..." read back with reader.Read gives the same
// ids. Values are 1.
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
//     Generate, by several, or by WriteLibFFM.
//
// # Teacher
//
// Every feature (field f, rank k, id) has a hidden weight
//
//	w(id, k) = N(id) / sqrt(1 + k/RankScale)
//
// where N(id) is a deterministic, approximately standard normal number
// derived from a hash of the id and WorldSeed (an Irwin-Hall sum of four
// uniforms). The shrinkage puts the signal in ids popular enough to be
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
// A Generator is not safe for concurrent use; give each goroutine its own,
// with its own Seed.
package datagen

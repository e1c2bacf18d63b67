// Package seqgen generates user-behaviour sequences for sequence CTR models
// (DIN, DIEN): each sample is a user, the user's history of items and one
// candidate item, labelled by a hidden teacher whose attention over the
// history is target-aware (DIN's premise) and favours recent items (so that
// with drifting interests a sequential model, DIEN, can beat DIN).
//
// # Fields
//
//	level 1 (user and history snapshot):
//	  0 user id          1 user segment
//	  2 history items (a sequence, oldest first)   3 their categories (aligned with 2)
//	  4 negative items (aligned with 2)            5 their categories (aligned with 4)
//	level 0 (candidate): 6 candidate item        7 its category
//
// A sequence field lists its items as repeated features of the field, in
// order ("2:242:1 2:51:1" is the history 242, 51). Tokens are decimal
// numbers: fields 2, 4 and 6 share the item tokens, fields 3, 5 and 7 the
// category tokens (the same token is the same item or category), so a
// reader that hashes a history field in the namespace of its target field
// (SequenceTargets) gives an item one id wherever it appears.
//
// # The world
//
// WorldSeed fixes everything hidden. There are Items items and Categories
// categories; item i has category c(i) = i mod Categories, so category c
// holds the items c, c+C, c+2C, ... Each category has a centre mu_c and each
// item a vector
//
//	v_i = mu_c(i) + tau * eps_i,   components of mu_c and eps_i ~ N(0, 1/K)
//
// (K = Dim, tau = ItemSpread; the normals are Irwin-Hall approximations
// from hashes), so items of a category cluster around its centre:
// <v_i, v_j> is about 1 within a category (1 + tau^2 for i = j) and
// about 0 (sd 1/sqrt(K)) across. User u has, as a function of u and WorldSeed, m in
// [2, MaxInterests] interests (distinct categories I_0..I_{m-1}, uniform),
// interest weights pi ~ Dirichlet(1, ..., 1), a segment in [0, Segments)
// and a user term
//
//	b_u = UserStd * (z_segment + z_u) / sqrt(2),   z ~ N(0, 1)
//
// # The stream
//
// Seed fixes the stream. A group is one user u (uniform in [0, Users)) and
// one history snapshot of length L, uniform in [MaxLen/5, MaxLen] (at
// least 1). Its history item t = 0..L-1 (oldest first) is, with
// probability Noise, any item (uniform); else an item (uniform) of the
// category I_k, where k is drawn by the weights pi, or with Drift (with
// probability 1 - DriftMix) k = floor(m*t/L): the interests follow one
// another along the history, I_{m-1} being the current one, so the late
// history comes from a newer interest than the early one. Each history
// item t has a negative: an item drawn uniformly among those not in the
// history (16 tries; then any item but item t). The group has G >= 1
// candidates, G geometric with mean MeanCandidates; a candidate is, with
// probability InterestShare, an item of an interest (k by the weights;
// with Drift, the current interest with probability CurrentShare and else
// an earlier one, uniformly), and otherwise any item, so that both labels
// occur.
//
// # The teacher
//
// The click probability of candidate c after history v_0..v_{L-1} is
//
//	d_t = <v_t, v_c>
//	a_t = beta * d_t + gamma * t / L                 (t = 0 the oldest)
//	w_t = exp(a_t) / sum_s exp(a_s)                   (softmax over the history)
//	z   = bias + b_u + s * sum_t w_t * d_t            (0 for an empty history)
//	p   = sigmoid(z),   label ~ Bernoulli(p)
//
// with s = Scale, beta = Beta, gamma = Gamma. The bias is calibrated (by
// bisection on 20,000 candidates of a stream fixed by WorldSeed) so that
// the mean of p is CTR. The target-aware part (beta) lets a single item of
// a minor interest match its candidate, which a sum (mean) of the history
// dilutes; the recency part (gamma) weighs late items more, which with
// Drift discounts candidates of old interests, and which a model without
// the order of the history (DIN) cannot see.
//
// With the defaults, on 40,000 test-stream samples (TestTeacher), the CTR
// is 0.25 and the best achievable AUC (the teacher's) 0.833 without drift
// and 0.823 with it. Oracles that know the item vectors but not the whole
// teacher, each with its best scale s, score: without recency (gamma = 0,
// what DIN can express) 0.825 and 0.791 (a loss of 0.009 without drift and
// 0.031 with it); a plain mean of the history (beta = gamma = 0, what sum
// pooling gives an MLP) 0.776 and 0.739.
//
// # Invariants
//
//  1. Fields 2-5 of a group have the same length L in [MinLen, MaxLen];
//     field 3 holds c(item) of field 2's item at the same position, field 5
//     that of field 4's; field 7 holds c(field 6's item).
//  2. A negative is never the positive of its position, and not in the
//     history unless 16 tries failed (a history covering most items).
//  3. The output is a pure function of the Config: the same Config gives
//     the same samples, labels and probabilities whether drawn by Write
//     (either format, in one call or several) or NextGroup. Generators with
//     the same WorldSeed share the world, the teacher and the bias; Fork
//     draws an independent stream of it (train and test sets).
//  4. Write holds one group at a time: memory does not grow with the
//     number of samples.
//
// A Generator is not safe for concurrent use; Forks may run in parallel
// (they share the read-only world).
//
// It is one of the synthetic sources under reader/synth (public: a model
// written outside the module can train and be checked on it), beside datagen and xcgen.
//
// # Files
//
//   - config.go: Config (every field's default), EnsureDefaults, Validate.
//   - world.go: the hidden world: item vectors, users' profiles and the teacher's attention.
//   - generator.go: the Generator (New, Fork, NextGroup): the stream; SequenceTargets (the history fields' target fields).
//   - write.go: Write: either text format, a group at a time.
package seqgen

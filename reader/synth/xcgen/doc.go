// Package xcgen generates extreme multi-label classification data shaped like
// Amazon-670K of the Extreme Classification Repository (135,909 sparse
// TF-IDF features, about 75 non-zeros per sample, 670,091 labels), with
// structure that a linear or shallow model can learn, and writes it in the
// repository's text format, which reader.XML reads.
//
// # Model
//
// The world is a function of Config.Seed (and the shape parameters):
//
//   - Labels and features have popularity ranks. Rank r is drawn with a
//     Zipf-like density proportional to (r+1)^-s on [0, n) (LabelZipf for
//     labels, PrototypeZipf and NoiseZipf for features), by inverting its
//     continuous CDF. Ranks map to ids by a seeded affine bijection
//     id = (a*r + c) mod n, so popular ids are scattered.
//   - Labels come in clusters of ClusterSize consecutive ranks (topics).
//     Label l has a prototype: PrototypeSize feature draws, the first
//     ClusterShare of them from its cluster's prototype (shared by the
//     cluster's labels), the rest its own, every draw a feature rank from
//     the PrototypeZipf law. Prototype draw j of a label is a pure function
//     of (Seed, label, j): nothing is stored.
//
// A sample (a pure function of Seed, the stream number and the sample index,
// so any sample can be drawn on its own and train and test splits are
// streams of one world):
//
//  1. Its label count c is in [MinLabels, MaxLabels], P(c) proportional to
//     LabelDecay^(c-MinLabels). The first label is drawn by popularity; each
//     further one, with probability Related, from the first label's cluster,
//     else by popularity; labels are distinct and written ascending.
//  2. Its feature count t is uniform in [ceil(NNZ/2), floor(3*NNZ/2)] (mean
//     NNZ), at most Features. About (1-Noise)*t distinct features come from
//     the prototypes of its labels (a label picked uniformly, then one of its
//     draws, earlier draws likelier: j = floor(PrototypeSize*u^2)), the rest
//     from the NoiseZipf law ("common words"). Repeated draws count as term
//     frequency tf.
//  3. A feature's value is (1 + ln tf) * idf with idf = 1 + NoiseZipf*ln(1 +
//     rank) (popular features weigh less), and the sample's vector is scaled
//     to unit L2 norm.
//
// Invariants of the output:
//
//  1. Every sample has between MinLabels and MaxLabels distinct labels in
//     [0, Labels), ascending, and between 1 and Features distinct features in
//     [0, Features), ascending, with positive values formatted by
//     strconv.FormatFloat(v, 'g', 5, 32).
//  2. The output is a pure function of (Config, stream, n): the same
//     arguments give the same bytes; the first k samples of a stream do not
//     depend on n.
//  3. The file is "N F L\n" followed by N lines "l1,l2,... f:v f:v ...\n".
//
// A Generator is immutable and safe for concurrent use; Sample and
// WriteXML take their scratch space from the caller (a Sample) or allocate
// it per call.
//
// It is one of the synthetic sources under reader/synth (public: a model
// written outside the module can train and be checked on it), beside datagen and seqgen.
//
// # Files
//
//   - xcgen.go: Config, New, the Generator (Sample, Prototype, WriteXML) and Sample (AppendXML).
package xcgen

// Package config is the model and training configuration of a job: the
// YAML file, the Go structs behind it, and their defaults. The same structs
// back the YAML file, the command-line flags (which override the file) and
// the Go API.
//
// Usage: Build makes a job's configuration once, from the user's sources
// (a YAML file, the command line's -set and short flags, a Config made in
// Go): the defaults, then the sources, then one validation that reports
// every problem at once (errors.Join), each wrapping ErrInvalid or
// ErrBadPath. A command's main calls it (config.Build(config.File(f),
// &overrides)); the job takes the Built result as it is, and builds a
// Config made in Go itself. Parse and Load are Build of a YAML document
// and of a file; Default is every default, EnsureDefaults fills a
// Config's zero fields and Validate checks one.
//
// # Zero
//
// In Go, a zero field means its default: EnsureDefaults fills it, so a
// Config literal names only what it changes ("The default value (also
// for 0) is 256"). Written by a user, in the YAML file (Parse, Load) or on
// the command line (Set: -set and the short flags), zero means zero, and
// where zero means nothing it is refused as a negative value is, naming
// the default, instead of quietly running with it: job.workers,
// job.split_bytes, model.seed, the learning rates
// (model.tables[*].optimizer.lr, model.dense_optimizer.lr), train's
// batch_size, epochs, shuffle_chunk, eval_batch_size,
// max_inflight_pushes and progress_every, the data generator's sizes and
// seeds (data.train_samples, data.vocab, ...), kafka.commit_every and
// kafka.max_wait (with kafka.brokers), snapshot.every (a negative value:
// only on request), snapshot.keep, export.every, export.full_every and
// export.keep: the keys whose field is tagged zero:"refused" (the
// tag's text after a semicolon is a hint the error gives; see zero.go).
// Where zero has a meaning, the key's doc says which, and a
// written zero keeps it: train.eval_every 0 (after each epoch only),
// train.prefetch_batches 0, train.dense_threads 0 (every core),
// model.fields 0 (from the data), snapshot.every_samples and
// export.every_samples 0 (off), a table's budget 0 (no bound), expiry
// rules 0 (off), model.output's k, l, r 0 (autotuned), labels 0 (from the
// data).
//
// A complete file with every default written out:
//
//	model:
//	  tables:                   # sparse embedding tables, on the AMS shards
//	    - name: emb
//	      dim: 18
//	      optimizer: {name: adagrad, lr: 0.1, initial_accumulator: 1e-4, eps: 1e-10}  # the kind's (mlp here)
//	      init: {kind: uniform, scale: 0.01}
//	  fields: 0                 # number of fields; 0 = 1 + the largest field in the data
//	  field_tables: []          # table name per field; empty = every field uses tables[0]
//	  pooling: sum              # sum or mean, per field bag
//	  hidden: [200, 80]         # MLP hidden layer sizes (ReLU); the output is one logit
//	  dense_optimizer: {name: adam, lr: 0.001}
//	  seed: 1                   # MLP initialisation and shuffling
//	  output:                   # logit (CTR) or slide (extreme classification, package job/xctrain)
//	    kind: logit
//	    labels: 0               # slide: output neurons; 0 = from the data
//	    hidden: []              # slide: dense ReLU layers between the embedding sum and the SLIDE layer
//	    sparsity: 0.005         # slide: active fraction per training sample; 1 = dense training
//	    infer_sparsity: 0.005   # slide: most labels scored per sample by sparse inference (default: sparsity)
//	    hash: dwta              # slide: dwta or simhash
//	    k: 0                    # slide: k, l, r override the autotuned hash tables (0: autotuned)
//	    l: 0
//	    r: 0
//	    lr: 0.001               # slide: the layer's Adam learning rate
//	    insert_labels: false    # slide: BOLT's "adding label neurons"
//	    no_center: false        # slide: hash weight rows as they are, not minus the mean row
//	    rehash_base: 50         # slide: first re-insertion period in batches
//	    redraw_period: 20000    # slide: batches between redraws of the hash functions (negative: never)
//	    threads: 0              # slide: the layer's goroutines (0: every core)
//	    infer_tune:             # slide: calibrate sparse inference before each evaluation
//	      agreement: 0.99       # slide: wanted share of sparse top-1 = dense top-1 (training samples)
//	      samples: 1024
//	      off: false
//	    eval: both              # slide: sparse, dense or both inferences on the test set
//	    eval_limit: 0           # slide: score only the first N test samples (0: all)
//	    progressive_every: 4    # slide: score every N-th training batch before training it (0: never)
//	train:
//	  batch_size: 256
//	  epochs: 1
//	  shuffle: true             # shuffle the training samples every epoch
//	  format: libffm            # for -train/-test files; default: the files' extension's, else libffm
//	  on_error: stop            # stop or skip malformed input lines
//	  eval_every: 0             # also evaluate every N batches; 0 = after each epoch only
//	  eval_batch_size: 4096
//	  max_inflight_pushes: 2    # asynchronous pushes in flight before training waits
//	  prefetch_batches: 1       # batches loaded and pulled ahead while one trains (0: off)
//	  dense_threads: 0          # goroutines per MLP matrix product (0: every core)
//	  progress_every: 2s        # progress line interval on stderr
//	data:                       # the built-in generated dataset (when no -train is given)
//	  train_samples: 500000
//	  test_samples: 40000
//	  fields: 23
//	  user_fields: 10
//	  mean_bag: 3
//	  vocab: 100000
//	  zipf_s: 1.1
//	  samples_per_user: 20
//	  seed: 1
//
// # Files
//
//   - config.go: Config and its sections (job, model, train, data...), Default, EnsureDefaults, Validate, Load and Write.
//   - build.go: Source (File, YAML, a Config, Overrides) and Build: defaults, the user's sources, one validation.
//   - set.go: Config.Set of a key path, and Overrides, the command line's changes (-set, the short flags: Bind, Apply).
//   - zero.go: zero in the Go API (the default) against zero written by a user (refused for fields tagged zero).
//   - sequence.go: the behaviour-history section of din and dien (IsSequence, MaxSeqLen).
//   - memory.go: DefaultShuffleWindow and the default memory limit, from the machine's memory.
//   - jobid.go: NewJobID and Config.KeepModelIn.
//   - autotune.go: AutotuneConfig, the autotune section (budget, kinds, trials, output), and ParseBudget.
package config

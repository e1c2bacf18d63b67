// Package filters holds the policies of a sparse table's rows: feature
// admission, which never-seen IDs earn a row, and expiry, which rows a
// sweep removes. A model that learns online for months sees a long tail of
// IDs that occur once or twice; giving each a row (values, optimizer
// state, an index entry) fills the shards with rows that never train. An
// admission policy keeps them out until they are worth a row; an expiry
// policy removes the rows that stopped being worth one (see "Expiry"
// below).
//
// The package is pure logic: no I/O, no clock, no goroutine, no lock. The
// AMS shard applies a filter in the stripe owner, where the table's rows
// live, before it creates a row, and sweeps the rows it owns for expiry.
//
// # Policies
//
// A table's Spec picks one (see Spec for the fields and their defaults):
//
//   - none: every ID is admitted at its first sighting (the behaviour
//     without filters).
//   - probability p: an ID is admitted iff
//     hashmix.Hash3(domain, salt, id) < p x 2^64, where salt names the
//     table. The decision is a pure function of the table and the ID, as
//     XDL's probability filter: every worker, every retry, every shard and
//     every restore agrees, and an ID refused once is refused for ever. It
//     keeps no state.
//   - count n: an ID is admitted at its n-th sighting (a pull that would
//     create its row, or a push to it). The sightings are counted with
//     Bloom filters (github.com/bits-and-blooms/bloom/v3) in rotating
//     generations, described below.
//
// # The count policy: cascades in generations
//
// A partition's state is up to G generations (Spec.Generations), oldest
// first; the last is current. A generation is a cascade of L = n-1 Bloom
// filters level[0..L-1] of m bits and k hashes each (Sizing): an ID's
// j-th sighting recorded in the generation is added to level[j-1], so an
// ID recorded j times is in the first j levels. The depth of an ID in a
// generation is the number of leading levels that hold it; the sightings
// credited to an ID are the sum of its depths. A sighting with n-1
// credited is admitted; any other is recorded in the current generation at
// level[depth] (Admit gives the reference loop).
//
// The filters are bloom/v3's (their bit sets, m and k), probed at
// locations the Filter computes once per sighting from one hash of the ID
// (the table's salt mixed in) and shares across every generation and
// level: bloom/v3's own Test would hash the ID again for each filter (two
// murmur3 passes each), which made admission a tenth of a shard's CPU in
// the drift benchmark.
//
// When a level of the current generation has had Capacity insertions, a
// new generation begins, and with G already kept the oldest is dropped
// (its memory is cleared and reused). This is why the count policy uses
// generations and not n cascaded filters alone: a Bloom filter cannot
// delete, so a single cascade fills up over months until every ID passes.
// Rotating by insertions rather than by time keeps every filter within its
// false-positive rate whatever the traffic, keeps the state a function of
// the sightings alone (no clock: see invariant 2), and makes old sightings
// fade; forgetting rows by time is expiry's job, not admission's.
//
// # Invariants
//
// These are admission's; expiry's follow under "Expiry invariants".
//
//  1. A Filter is owned by one goroutine, the stripe owner, which makes
//     every call; it has no lock and no atomic, and is not safe for
//     concurrent use. The bytes AppendPartition returns are the caller's;
//     UnmarshalPartition keeps no reference to its input.
//  2. Decisions are deterministic: a pure function of the spec, the salt
//     and the sequence of sightings of the partition (no clock, no random
//     source, no map iteration). Two filters of the same spec fed the same
//     sightings make the same decisions and write the same state bytes.
//  3. Partitions are independent: the state of partition p changes only
//     with sightings of p's IDs. So a restore onto another shard count
//     moves whole partitions: AppendPartition on the old owner,
//     UnmarshalPartition on the new one (DropPartition where it left), and
//     the new owner decides as the old one would have. Every sighting of a
//     partition must reach the one filter that holds its state: two
//     filters that each saw part of a partition's sightings hold states
//     that cannot be merged.
//  4. No late admission: a Bloom filter has no false negatives, so an ID
//     whose n-1 earlier sightings are still kept is admitted at its n-th,
//     always. The only error is an early admission. Every filter holds at
//     most Capacity IDs, sized so that its false-positive rate stays below
//     FilterRate = false_positive_rate / G (the standard estimate at
//     Capacity is 0.9 x FilterRate, a margin for real filters' scatter
//     around it), so a sighting is credited with at least one phantom
//     sighting with probability below G x FilterRate = false_positive_rate
//     (a union bound over the generations it is probed in). An ID missing
//     r sightings is admitted early with probability below
//     false_positive_rate for r = 1, and about false_positive_rate^r
//     beyond (each phantom is a further false positive).
//     TestCountFalsePositiveRate measures it at the fullest load: 0.0089
//     for a rate of 0.01.
//  5. Memory is bounded: a partition holds at most G generations of L
//     filters of m bits, Sizing().PartitionBytes <= max_partition_bytes,
//     plus 4 bytes of counter per filter; a partition's first generation is
//     allocated at its first sighting, the others as they begin. A Filter
//     adds 8 bytes per partition of index once it holds any state.
//  6. Sightings fade: a recorded sighting is kept for at least the next
//     (G-1) x Capacity recorded sightings of its partition (each later
//     generation took Capacity insertions to fill one level) and forgotten
//     within G x L x Capacity (a generation holds at most Capacity per
//     level). A sighting that finds its level already set by a false
//     positive records nothing and counts toward neither.
//  7. A partition state is versioned (format 1), framed by its exact
//     length and checksummed (CRC-32C); UnmarshalPartition checks all of
//     it, its insertion counts included, before it changes anything. A
//     state that does not decode is refused with ErrCorrupt, an intact one
//     of another spec (a changed config) with ErrMismatch; no input makes
//     it panic (FuzzUnmarshalPartition). The Bloom bits depend on the
//     locations of an ID (one hashmix hash of salt and ID, then k
//     double-hashing probes: Filter.locate) and on bloom/v3's bit layout;
//     TestStateGolden pins them, so a change to either fails a test
//     rather than silently voiding the snapshots.
//  8. Spec.Validate reports every problem at once, each wrapping
//     ErrBadPolicy: an unknown kind, p outside (0, 1], n outside [1, 64], a
//     false-positive rate outside (0, 1), generations outside [1, 16], a
//     memory bound outside [1, 1 GiB] or too small to give each filter
//     MinCapacity IDs at its rate, and a field set for a kind that does not
//     use it.
//
// # Usage protocol
//
//  1. The stripe owner builds one Filter per table with New(spec,
//     ams.TableHash(table), P), P the model's virtual partitions. All the
//     IDs of a partition must reach the same owner (invariant 3): stripes
//     chosen by partition, not by bits of the ID's hash that the partition
//     does not fix.
//  2. Before it creates a row for an ID that has none (a pull with create,
//     a push), it calls Admit(partition of the ID, ID) and creates the row
//     only on true. It does not call Admit for IDs that have a row: the
//     filter counts sightings of IDs without one. Each call is a sighting,
//     so a retried request counts again.
//  3. A snapshot stores AppendPartition of every partition the owner holds
//     (Partitions lists those with state) next to the partition's rows.
//  4. A restore calls UnmarshalPartition for every partition the owner
//     gets, and DropPartition for every one it no longer owns. On
//     ErrMismatch the table's filter config changed since the snapshot: the
//     owner refuses the restore or begins the partition empty, as it is
//     configured.
//
// # Expiry
//
// A table's ExpirySpec sets its expiry rules; NewExpiry compiles them into
// an Expiry, whose Expired decides on one row from its statistics
// (RowStats). A row expires when any rule says so, a rule that is off
// saying no:
//
//   - ttl_samples T: the row is idle for more than T samples on the
//     sample clock: IdleSamples > T.
//   - ttl D: the row is idle for longer than D in wall time: Age > D.
//   - min_hits h, with min_hits_ttl_samples Ts and/or min_hits_ttl Ds: a
//     shorter TTL for rows seen rarely: Hits < h and (IdleSamples > Ts or
//     Age > Ds).
//   - expr: the expression over hits, age, idle_samples and norm is true,
//     as hits < 3 && age > "72h". It is evaluated last, and only for the
//     rows the TTLs keep.
//   - the embedder's hook (ExpireFunc), which the shard takes in its
//     options and calls for the rows that every rule keeps.
//
// The reference loop, with "false" for a rule that is off:
//
//	expired := r.IdleSamples > ttl_samples || r.Age > ttl ||
//		r.Hits < min_hits && (r.IdleSamples > min_hits_ttl_samples || r.Age > min_hits_ttl) ||
//		expr(r) || hook(table, r)
//
// The package reads no clock; the caller measures a row against two:
//
//   - The sample clock is the shard's count of the trained samples it has
//     applied (the samples of the pushes it applied). A row remembers the
//     clock at its last update; IdleSamples is the clock now minus that.
//     A TTL in samples means the same whatever the training speed, and
//     does not run while the job is stopped.
//   - Wall age is the sweep's now minus the row's last-update second (the
//     shard keeps update times to the second). It runs while the job is
//     stopped: a job stopped for longer than ttl loses those rows at its
//     next sweeps, a lap's cap at a time.
//
// Hits is the row's hit count as the shard keeps it; norm is the L2 norm
// of the row's values (DeepRec's L2-weight eviction), which the caller
// computes only when Expiry.NeedsNorm.
//
// The sweep runs inside each stripe owner, over the rows it owns, a slice
// at a time between its other work. One pass over a table's rows is a lap;
// the evictions of a lap are capped at MaxPerLap of the table's rows in
// the stripe when the lap began: floor(max_expire_fraction x rows), at
// least MinExpirePerLap (one row, so that tiny tables expire too) and at
// most rows. Lap counts them. A row that expires after the cap is reached
// is kept, and expires at a later lap if it still should. So one bad
// setting (a TTL in the wrong unit, an expression always true) removes at
// most 10% of a table per lap at the default fraction (or one row per
// stripe, where a stripe holds fewer than 10 of the table's rows), not the
// whole table in one pass, and LapStats.Capped shows it.
//
// # Expiry invariants
//
//  1. An Expiry and its Laps are owned by one goroutine, the stripe owner,
//     which makes every call; they have no lock and are not safe for
//     concurrent use (the expression's machine and environment are
//     reused). Each stripe owner compiles its own Expiry from the spec.
//     The ExpireFunc is shared by every stripe owner: it must be safe for
//     concurrent use.
//  2. Decisions are pure: Expired is a function of the spec and the
//     RowStats alone (no clock, no random source; the expression's clock
//     builtins now, date and timezone are disabled). The caller passes the
//     clocks in RowStats, so tests drive them.
//  3. Rules only add: a row expires iff at least one rule or the hook says
//     so. Setting a rule never keeps a row that another expires, and a spec
//     without rules expires nothing. A row whose Age is negative (the clock
//     went back) is as young as one just updated.
//  4. A lap evicts at most MaxPerLap(rows at its start) rows, whatever the
//     rules and the hook say: Lap.Allow is false once the cap is reached,
//     and outside a lap.
//  5. Bad input is refused before it runs: ExpirySpec.Validate, and so
//     NewExpiry, reports every problem at once, each wrapping ErrBadExpiry
//     (which wraps ErrBadPolicy): a negative ttl_samples, min_hits or
//     min_hits_ttl_samples; a duration that does not parse or is not
//     positive; min_hits without a TTL of its own, or one without min_hits;
//     a min-hits TTL not shorter than the TTL on the same clock (the rule
//     would expire nothing more); an expression that does not parse, is
//     not of type bool, names an unknown variable or function, or holds a
//     malformed duration literal (with expr's message and the place); and
//     max_expire_fraction outside (0, 1]. A duration literal becomes a
//     constant at compile time, so it cannot fail at run time.
//  6. A failure keeps the row: Expired never panics (FuzzExpired), and an
//     expression that fails at run time (an integer division by zero)
//     keeps the row and is counted by EvalErrors. Keeping a row costs
//     memory until the next lap; expiring one wrongly loses its training.
//  7. The TTL and min-hits rules cost a few comparisons with thresholds
//     computed by NewExpiry, without allocation; the expression runs on a
//     reused machine and only for the rows the TTLs keep, and reads norm
//     only when it names it (NeedsNorm). BENCHMARKS.md has the figures.
//
// # Expiry usage protocol
//
//  1. Declare checks the table's ExpirySpec (EnsureDefaults, Validate)
//     with its other specs, and refuses the table with every problem
//     listed.
//  2. Each stripe owner builds, per table, NewExpiry(spec) and a Lap
//     (Expiry.NewLap), skipping tables whose Expiry is not Enabled and
//     that have no hook.
//  3. When a lap begins, the owner calls Lap.Begin with the table's rows
//     in its stripe.
//  4. For each row of each slice it fills RowStats (Norm only when
//     NeedsNorm) and evicts the row iff (Expired(r) || hook != nil &&
//     hook(table, r)) && lap.Allow(). Once Allow is false, the owner may
//     skip the rest of the lap's rows, or go on to count them as Capped.
//  5. When the lap is over it calls Lap.End and reports the LapStats and
//     EvalErrors.
//
// # Files
//
//   - spec.go: Spec (EnsureDefaults, Validate), Sizing and the package's errors.
//   - filter.go: Filter (New, Admit, Count, MemoryBytes): admission of new IDs by probability or count, per partition.
//   - state.go: a partition's admission state, its binary format (MarshalPartition, AppendPartition, DropPartition).
//   - expiry.go: ExpirySpec, Expiry (NewExpiry), RowStats and Lap: which rows expire and how many per lap.
//   - expiry_expr.go: the expiry expression (expr), compiled and evaluated over a row's statistics.
package filters

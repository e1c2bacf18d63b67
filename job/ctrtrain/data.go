package ctrtrain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/xdlgo/xps/cluster/membership"
	"github.com/xdlgo/xps/config"
	"github.com/xdlgo/xps/job"
	"github.com/xdlgo/xps/model/ctr"
	"github.com/xdlgo/xps/model/metrics"
	"github.com/xdlgo/xps/reader"
	"github.com/xdlgo/xps/reader/hdfssrc"
	"github.com/xdlgo/xps/reader/synth/datagen"
)

// Data is a job's training and test data.
type Data struct {
	// Train opens the training data for an epoch, at start (the zero
	// Position: the beginning; Kafka sources take their positions from the
	// model and ignore it).
	Train func(epoch int, start reader.Position) (reader.Source, error)
	// Test is the test set in memory (nil for none), Valid the validation
	// set (config job.valid, or data.valid_samples: the first worker's).
	Test, Valid []*reader.Group
	// Shape is the model input shape found in the data and the config.
	Shape ctr.Shape
	// Desc describes where the data came from, for humans.
	Desc string
	// BestAUC is the best achievable test AUC (the hidden teacher's own),
	// known for generated data only (and a test set of both classes).
	BestAUC *float64
	// Empty is set for training files that hold no sample: the share of a
	// worker of several (one worker's empty files are an error).
	Empty bool
}

// FromStart returns Train opening every epoch at its beginning, as
// Options.Train takes it.
func (d Data) FromStart() func(epoch int) (reader.Source, error) {
	return func(epoch int) (reader.Source, error) { return d.Train(epoch, reader.Position{}) }
}

// peekSamples is how many training samples LoadData looks at to find the
// fields, their levels and dense widths.
const peekSamples = 20000

// LoadData prepares the job's training and test data: the job's own
// Source when set, files when opts.Config.Job.Train is set (splits as
// given), otherwise the generated dataset.
func LoadData(opts job.Options, splits []reader.FileSplit) (Data, error) {
	var sh shapeFinder
	switch {
	case opts.Source != nil:
		return sourceData(opts, &sh)
	case len(opts.Config.Job.Train) > 0:
		d, err := fileData(opts, splits, &sh)
		return d, formatHint(opts.FS, opts.Config.Train.Format, err)
	}
	return generatedData(opts, &sh)
}

// formatHint adds to a malformed line of a file, when the file's first
// sample line reads as another format than format, a hint at -format:
// a libFM file read as libFFM fails at its first feature.
func formatHint(fsys reader.FS, format string, err error) error {
	var le *reader.LineError
	if !errors.As(err, &le) || le.Source == "" {
		return err
	}
	f, ok := reader.SniffFileFS(fsys, le.Source)
	if !ok || f.String() == format {
		return err
	}
	return fmt.Errorf("%w (read as %s, but the file looks like %s: give -format %s)", err, format, f, f)
}

// sourceData is the job's own Source, and its TestSource read into memory.
func sourceData(opts job.Options, sh *shapeFinder) (Data, error) {
	d := Data{Train: opts.Source, Desc: "the job's own sample source"}
	if _, _, err := peek(d.Train, sh); err != nil {
		return Data{}, err
	}
	if opts.TestSource != nil {
		src, err := opts.TestSource()
		if err != nil {
			return Data{}, fmt.Errorf("worker: test data: %w", err)
		}
		if d.Test, err = readTest(src, sh); err != nil {
			return Data{}, err
		}
	}
	var err error
	d.Shape, err = sh.shape(opts.Config, true)
	return d, err
}

// fileData is the job's files: streamed in order, or shuffled per epoch
// through a window or whole in memory (train.shuffle, train.in_memory).
func fileData(opts job.Options, splits []reader.FileSplit, sh *shapeFinder) (Data, error) {
	cfg := opts.Config
	in, err := inputOf(cfg, opts.FS)
	if err != nil {
		return Data{}, err
	}
	if err := in.check(splits); err != nil {
		return Data{}, err
	}
	format := in.format
	inOrder := filesInOrder(in, splits)
	train := strings.Join(cfg.Job.Train, ",")
	d := Data{Train: inOrder, Desc: fmt.Sprintf("%d file splits of %s (format %s, streamed in order)", len(splits), train, format)}
	n, skipped, err := peek(inOrder, sh)
	if err != nil {
		return Data{}, err
	}
	// A worker of several may have a share without samples; the files of
	// a worker of one are the whole training data.
	d.Empty = n == 0
	if n == 0 && opts.Workers() == 1 {
		paths := make([]string, len(splits))
		for i, sp := range splits {
			paths[i] = sp.Path
		}
		return Data{}, noSamples("training data", paths, malformed(skipped, format))
	}
	if *cfg.Train.Shuffle {
		if cfg.Train.InMemory {
			if err := checkMemory(opts, splits, sh.payloadPerByte()); err != nil {
				return Data{}, err
			}
		}
		d.Desc = fmt.Sprintf("%d file splits of %s (format %s, %s)", len(splits), train, format, shuffleText(cfg))
	}
	if d.Train, err = fileStream(in, cfg, splits); err != nil {
		return Data{}, err
	}
	if d.Test, err = loadTest(in, cfg.Job.Test, sh); err != nil {
		return Data{}, err
	}
	if h := cfg.Job.Holdout; h > 1 {
		d.Desc += fmt.Sprintf("; about 1 in %d sample groups held out as the validation set, never trained on", h)
	}
	if opts.Index == 0 {
		if d.Valid, err = loadValid(in, cfg, sh); err != nil {
			return Data{}, err
		}
	}
	d.Shape, err = sh.shape(cfg, in.levels())
	return d, err
}

// fileStream opens the training files of splits for an epoch: in order,
// or shuffled (train.shuffle) through a window or whole in memory
// (train.in_memory). A shuffled epoch reads the splits cut into blocks of
// a sixteenth of the window (at least blockMin bytes) in an order
// shuffled for the epoch, so that every window holds groups from all over
// the data, not only from its neighbourhood.
func fileStream(in input, cfg config.Config, splits []reader.FileSplit) (stream, error) {
	if !*cfg.Train.Shuffle {
		return heldBack(filesInOrder(in, splits), cfg.Job.Holdout), nil
	}
	blocks, err := cutBlocks(in.fsys, splits, max(cfg.Train.ShuffleWindow/16, blockMin))
	if err != nil {
		return nil, fmt.Errorf("worker: training data: %w", err)
	}
	shuffled := func(epoch int, start reader.Position) (reader.Source, error) {
		return in.open(shuffledBlocks(blocks, cfg.Model.Seed, epoch), start, true)
	}
	// The held-out groups leave before the window, which renames
	// positions: reader.HeldOut reads the files'.
	return windowed(heldBack(shuffled, cfg.Job.Holdout), cfg, cfg.Train.InMemory), nil
}

// filesInOrder opens the training files of splits in order, whatever the
// epoch.
func filesInOrder(in input, splits []reader.FileSplit) stream {
	return func(_ int, start reader.Position) (reader.Source, error) { return in.open(splits, start, false) }
}

// TrainDigest returns what the checkpoints of a worker whose share is
// splits sum to once it has trained epochs epochs of cfg's job: the sum of
// the digests (reader.Digest) of the samples of every epoch's training
// data, read as the worker reads it (train.shuffle, its window and seed).
// Tests check exactly-once against it.
func TrainDigest(cfg config.Config, splits []reader.FileSplit, epochs int) (uint64, error) {
	in, err := inputOf(cfg, nil)
	if err != nil {
		return 0, err
	}
	open, err := fileStream(in, cfg, splits)
	if err != nil {
		return 0, err
	}
	var sum uint64
	for epoch := 1; epoch <= epochs; epoch++ {
		src, err := open(epoch, reader.Position{})
		if err != nil {
			return 0, err
		}
		_, d, err := reader.Digest(context.Background(), src)
		src.Close()
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// shuffleText says how the training data is shuffled.
func shuffleText(cfg config.Config) string {
	if cfg.Train.InMemory {
		return fmt.Sprintf("in memory, chunks of up to %d samples shuffled per epoch", cfg.Train.ShuffleChunk)
	}
	return fmt.Sprintf("shuffled per epoch in windows of %s, chunks of up to %d samples", mibText(cfg.Train.ShuffleWindow), cfg.Train.ShuffleChunk)
}

// mibText formats a byte count in MiB (GiB from 10 GiB).
func mibText(b int64) string {
	if b >= 10<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}

// checkMemory estimates the memory the training files of splits take held
// whole (their bytes times perByte, the payload per byte of the samples
// peeked at: reader.Pack holds about that), prints it, and refuses data
// whose estimate exceeds train.memory_limit.
func checkMemory(opts job.Options, splits []reader.FileSplit, perByte float64) error {
	whole, err := cutBlocks(opts.FS, splits, math.MaxInt64) // the splits, measured
	if err != nil {
		return fmt.Errorf("worker: training data: %w", err)
	}
	var size int64
	for _, sp := range whole {
		size += sp.End - sp.Start
	}
	est, limit := int64(perByte*float64(size)), opts.Config.Train.MemoryLimit
	if opts.Progress != nil {
		fmt.Fprintf(opts.Progress, "%s: train.in_memory: the training data (%s of files) takes about %s in memory (train.memory_limit %s)\n",
			membership.WorkerName(opts.Index), mibText(size), mibText(est), mibText(limit))
	}
	if est > limit {
		return fmt.Errorf("%w: train.in_memory: the training data (%s of files) would take about %s in memory, above train.memory_limit %s: "+
			"leave train.in_memory off to shuffle it through a window of train.shuffle_window bytes, or raise train.memory_limit",
			ErrNoData, mibText(size), mibText(est), mibText(limit))
	}
	return nil
}

// generatedData is the generated dataset, streamed: worker i of W takes
// groups i, i+W, ...; the test set, every worker's, comes from an
// independent stream of the same world.
func generatedData(opts job.Options, sh *shapeFinder) (Data, error) {
	cfg := opts.Config
	dc := cfg.Data
	maxGroup := 1 << 30
	if *cfg.Train.Shuffle {
		maxGroup = cfg.Train.ShuffleChunk
	}
	inOrder := func(_ int, start reader.Position) (reader.Source, error) {
		return openGenerated(dc, opts.Index, opts.Workers(), maxGroup, start)
	}
	if _, _, err := peek(inOrder, sh); err != nil {
		return Data{}, err
	}
	test, probs, err := generateTest(dc, datagen.TestStream, dc.TestSamples)
	if err != nil {
		return Data{}, err
	}
	var valid []*reader.Group
	if opts.Index == 0 && dc.ValidSamples > 0 {
		if valid, _, err = generateTest(dc, datagen.ValidStream, dc.ValidSamples); err != nil {
			return Data{}, err
		}
	}
	var labels []float32
	for _, g := range test {
		sh.add(g)
		for i := 0; i < g.NumSamples(); i++ {
			labels = append(labels, g.Label(i))
		}
	}
	var bestAUC *float64 // none for a test set of one class
	if auc := metrics.AUC(labels, probs); !math.IsNaN(auc) {
		bestAUC = &auc
	}
	shape, err := sh.shape(cfg, true)
	if err != nil {
		return Data{}, err
	}
	d := Data{Train: inOrder, Test: test, Valid: valid, Shape: shape, BestAUC: bestAUC,
		Desc: fmt.Sprintf("generated CTR data (%d fields, %d user fields, %d train samples, seed %d)",
			dc.Fields, dc.UserFields, dc.TrainSamples, dc.Seed)}
	if *cfg.Train.Shuffle {
		d.Train = windowed(inOrder, cfg, cfg.Train.InMemory)
	}
	return d, nil
}

// generateTest generates samples of stream (the test set's, or the
// validation set's) and the teacher's probabilities.
func generateTest(dc config.DataConfig, stream uint64, samples int) ([]*reader.Group, []float32, error) {
	gen, err := datagen.New(dc.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("worker: generator: %w", err)
	}
	gen = gen.Fork(stream)
	var test []*reader.Group
	var probs []float32
	g := new(reader.Group)
	for n := 0; n < samples; n += g.NumSamples() {
		probs = gen.NextGroup(g, samples-n, probs)
		test = append(test, g.Clone())
	}
	return test, probs, nil
}

// heldBack is the training stream of files less the groups job.holdout
// holds out (1 in every; below 2, train itself).
func heldBack(train stream, every int) stream {
	if every < 2 {
		return train
	}
	return func(epoch int, start reader.Position) (reader.Source, error) {
		src, err := train(epoch, start)
		if err != nil {
			return nil, err
		}
		return reader.Holdout(src, every, false), nil
	}
}

// loadValid reads the validation set into memory and adds it to sh: the
// job.valid files, or the groups job.holdout holds out of every training
// file.
func loadValid(in input, cfg config.Config, sh *shapeFinder) ([]*reader.Group, error) {
	if cfg.Job.Holdout < 2 {
		v, err := loadTest(in, cfg.Job.Valid, sh)
		if err != nil {
			return nil, fmt.Errorf("job.valid: %w", err)
		}
		return v, nil
	}
	v, err := loadHeld(in, cfg.Job.Train, cfg.Job.Holdout, sh)
	if err != nil {
		return nil, fmt.Errorf("job.holdout: %w", err)
	}
	return v, nil
}

// loadTest reads the test files into memory and adds them to sh.
func loadTest(in input, patterns []string, sh *shapeFinder) ([]*reader.Group, error) {
	return loadHeld(in, patterns, 0, sh)
}

// loadHeld reads the files of patterns into memory, only the groups
// reader.HeldOut(every) holds out when every is at least 2, and adds
// them to sh.
func loadHeld(in input, patterns []string, every int, sh *shapeFinder) ([]*reader.Group, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	paths, err := reader.ExpandPathsFS(in.fsys, patterns)
	if err != nil {
		return nil, fmt.Errorf("worker: test data: %w", err)
	}
	ts := make([]reader.FileSplit, len(paths))
	for i, p := range paths {
		ts[i] = reader.FileSplit{Path: p}
	}
	if err := in.check(ts); err != nil {
		return nil, err
	}
	src, err := in.open(ts, reader.Position{}, false)
	if err != nil {
		return nil, err
	}
	if every > 1 {
		src = reader.Holdout(src, every, true)
	}
	test, err := readTest(src, sh)
	if err == nil && len(test) == 0 {
		err = noSamples("test data", paths, malformed(src.Stats().Skipped, in.format))
	}
	return test, err
}

// noSamples is the error of files (of what) that hold no samples; skipped
// says what they held that was malformed ("" for nothing).
func noSamples(what string, files []string, skipped string) error {
	holds := "file " + strings.Join(files, ", ") + " holds"
	if len(files) > 1 {
		holds = "files " + strings.Join(files, ", ") + " hold"
	}
	if skipped != "" {
		skipped = " (" + skipped + " skipped under train.on_error: skip)"
	}
	return fmt.Errorf("%w: %s: %s no samples%s", ErrNoData, what, holds, skipped)
}

// malformed counts n malformed inputs skipped, in the units of format
// ("12 malformed lines"; groups for the group format), or is "" when n
// is 0.
func malformed(n int64, format reader.Format) string {
	unit := "line"
	switch format {
	case reader.SampleGroup:
		unit = "group"
	case reader.Parquet:
		unit = "row"
	}
	switch n {
	case 0:
		return ""
	case 1:
		return "1 malformed " + unit
	}
	return fmt.Sprintf("%d malformed %ss", n, unit)
}

// readTest reads the test set from src into memory, closes src and adds
// the test groups to sh.
func readTest(src reader.Source, sh *shapeFinder) ([]*reader.Group, error) {
	test, err := readAll(src)
	if err != nil {
		return nil, fmt.Errorf("worker: test data: %w", err)
	}
	for _, g := range test {
		sh.add(g)
	}
	return test, nil
}

// readAll reads a source to its end into memory and closes it.
func readAll(src reader.Source) ([]*reader.Group, error) {
	defer src.Close()
	return reader.ReadAll(context.Background(), src)
}

// peek feeds the first peekSamples training samples to sh and returns how
// many it saw and how many malformed groups the source skipped.
func peek(open func(int, reader.Position) (reader.Source, error), sh *shapeFinder) (samples int, skipped int64, err error) {
	src, err := open(1, reader.Position{})
	if err != nil {
		return 0, 0, err
	}
	defer src.Close()
	g := new(reader.Group)
	for samples < peekSamples {
		err := src.Next(context.Background(), g)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, 0, fmt.Errorf("worker: training data: %w", err)
		}
		sh.add(g)
		sh.payload += reader.WindowBytes(g)
		samples += g.NumSamples()
	}
	sh.bytes = src.Stats().Bytes
	return samples, src.Stats().Skipped, nil
}

// shapeFinder collects the fields of sample groups: the largest field, the
// level of the line each field is first seen on, and dense widths.
type shapeFinder struct {
	fields int // 1 + the largest field, at most ctr.MaxFields+1
	level  map[uint32]int
	dense  map[uint32]int
	// big is the largest field too large for a model (>= ctr.MaxFields) and
	// bigAt where it was first seen (see where); bigSeen says there is one.
	big     uint32
	bigAt   string
	bigSeen bool
	// payload and bytes sum the WindowBytes of the groups added and the
	// bytes of the input they were read from (when known).
	payload, bytes int64
	err            error
}

// payloadPerByte is the payload (reader.WindowBytes) of the groups added
// per byte of their input, 1 when unknown.
func (s *shapeFinder) payloadPerByte() float64 {
	if s.bytes <= 0 || s.payload <= 0 {
		return 1
	}
	return float64(s.payload) / float64(s.bytes)
}

func (s *shapeFinder) add(g *reader.Group) {
	if s.level == nil {
		s.level, s.dense = map[uint32]int{}, map[uint32]int{}
	}
	for k := range g.Levels {
		l := &g.Levels[k]
		for _, f := range l.Fields {
			s.field(f, k, g)
		}
		for i := 0; i < l.Len(); i++ {
			l.Dense(i, func(f uint32, v []float32) {
				s.field(f, k, g)
				if w, ok := s.dense[f]; ok && w != len(v) && s.err == nil {
					s.err = fmt.Errorf("worker: dense field %d has vectors of %d and %d values", f, w, len(v))
				}
				s.dense[f] = len(v)
			})
		}
	}
}

// field records field f, seen on a line of level k of g.
func (s *shapeFinder) field(f uint32, k int, g *reader.Group) {
	s.fields = max(s.fields, int(min(f, ctr.MaxFields))+1)
	if _, ok := s.level[f]; !ok {
		s.level[f] = k
	}
	if f >= ctr.MaxFields && (!s.bigSeen || f > s.big) {
		s.big, s.bigAt, s.bigSeen = f, s.where(g), true
	}
}

// where says where g was read, as words that follow "field N": its file
// and line when known ("at train.libffm line 17", "in the group at
// train.txt line 17" for a group of several lines), else its position.
func (s *shapeFinder) where(g *reader.Group) string {
	lines := 0
	for k := range g.Levels {
		lines += g.Levels[k].Len()
	}
	switch {
	case g.Line > 0 && lines > 1:
		return fmt.Sprintf(" in the group at %s line %d", g.Pos.File, g.Line)
	case g.Line > 0:
		return fmt.Sprintf(" at %s line %d", g.Pos.File, g.Line)
	case g.Pos.File != "":
		return fmt.Sprintf(" at position %v", g.Pos)
	}
	return ""
}

// shape returns the model shape: config values win over what the data
// shows; data levels are used when useLevels.
func (s *shapeFinder) shape(cfg config.Config, useLevels bool) (ctr.Shape, error) {
	if s.err != nil {
		return ctr.Shape{}, s.err
	}
	m := cfg.Model
	n := max(m.Fields, len(m.FieldTables), len(m.FieldLevels))
	if n > ctr.MaxFields {
		return ctr.Shape{}, fmt.Errorf("worker: the config gives the model %d fields (model.fields, field_tables, field_levels), more than %d", n, ctr.MaxFields)
	}
	if m.Fields == 0 {
		n = max(n, s.fields)
	}
	if n == 0 {
		return ctr.Shape{}, fmt.Errorf("%w: the data has no features", ErrNoData)
	}
	if n > ctr.MaxFields {
		return ctr.Shape{}, fmt.Errorf("worker: field %d%s: the model would have %d fields (1 + the largest field in the data), more than %d: check the data format (libFM fields are positions in the line) or set model.fields",
			s.big, s.bigAt, int64(s.big)+1, ctr.MaxFields)
	}
	sh := ctr.Shape{Fields: n, Levels: make([]int, n), DenseWidths: make([]int, n)}
	for f := 0; f < n; f++ {
		switch {
		case f < len(m.FieldLevels):
			sh.Levels[f] = m.FieldLevels[f]
		case useLevels:
			sh.Levels[f] = s.level[uint32(f)]
		}
		sh.DenseWidths[f] = s.dense[uint32(f)]
	}
	return sh, nil
}

func countSamples(gs []*reader.Group) int {
	n := 0
	for _, g := range gs {
		n += g.NumSamples() - g.Pos.Index
	}
	return n
}

// CountTrain returns the samples of one epoch of cfg's training data: the
// generated data's train_samples, or the samples of the training files
// less those job.holdout holds out, read once in order (all workers'
// shares; malformed input as train.on_error says). Kafka has no count: an error.
func CountTrain(ctx context.Context, cfg config.Config) (int64, error) {
	if cfg.Kafka.Enabled() {
		return 0, errors.New("worker: a Kafka topic has no sample count")
	}
	if len(cfg.Job.Train) == 0 {
		return int64(cfg.Data.TrainSamples), nil
	}
	fsys, closer, err := hdfssrc.ForPaths(cfg.Job.Train, "")
	if err != nil {
		return 0, fmt.Errorf("worker: training data: %w", err)
	}
	defer closer.Close()
	splits, err := wholeFiles(fsys, cfg.Job.Train)
	if err != nil {
		return 0, err
	}
	in, err := inputOf(cfg, fsys)
	if err != nil {
		return 0, err
	}
	src, err := heldBack(filesInOrder(in, splits), cfg.Job.Holdout)(1, reader.Position{})
	if err != nil {
		return 0, err
	}
	defer src.Close()
	n, _, err := reader.Digest(ctx, src)
	if err != nil {
		return 0, fmt.Errorf("worker: training data: %w", err)
	}
	return n, nil
}

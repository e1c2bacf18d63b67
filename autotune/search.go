package autotune

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Eta is the factor of successive halving: each round keeps the best
// 1/Eta of its trials (at least one) and gives each Eta times the samples.
const Eta = 3

// MinTrialBatches is the fewest batches a first-round trial may train:
// fewer give a validation figure that ranks little but the init.
const MinTrialBatches = 20

// Plan is how a search spends its budget: Trials settings in the first
// round, each trained First samples; round k keeps ceil(Trials/Eta^k) of
// them, trained First*Eta^k samples each (at most Run, one training
// run), from the start; the winner then trains Run samples as the job.
type Plan struct {
	// Trials is the first round's trial count, Rounds the rounds.
	Trials int `json:"trials"`
	Rounds int `json:"rounds"`
	// First is a first-round trial's samples; Run one training run's
	// (train.epochs over the data), which the winner trains.
	First int64 `json:"first_samples"`
	Run   int64 `json:"run_samples"`
	// Budget is what the search and the winner may train together.
	Budget int64 `json:"budget_samples"`
	// Resume says a promoted trial goes on from its model of the round
	// before (adding Samples(k)-Samples(k-1)) and the winner's run from
	// its last trial's (adding Run-Samples(Rounds-1)); without it every
	// trial and the winner's run start afresh.
	Resume bool `json:"resume"`
}

// NewPlan plans trials first-round trials within budget samples in all,
// of which the winner's run takes run; batch is the batch size. The
// rounds go on while a round has more than one trial: the round that
// would have one is the winner's run. A budget that
// leaves a first-round trial fewer than MinTrialBatches batches is an
// error that says what budget is needed. With resume, promoted trials and
// the winner's run go on from the models of the trials before (see
// Plan.Resume): with 9 trials and 3x, rounds of a sixth and a half of a
// run instead of a ninth and a third.
func NewPlan(trials int, budget, run int64, batch int, resume bool) (Plan, error) {
	if trials < 1 || run < 1 || batch < 1 {
		return Plan{}, fmt.Errorf("autotune: a plan of %d trials, runs of %d samples, batches of %d", trials, run, batch)
	}
	p := Plan{Trials: trials, Run: run, Budget: budget, Resume: resume}
	// units is the search's cost less what it saves the winner's run, in
	// first-round trials' samples.
	var units, last int64
	for n, scale := trials, int64(1); n > 1; n, scale = (n+Eta-1)/Eta, scale*Eta {
		p.Rounds++
		add := scale
		if resume {
			add -= last
		}
		units += int64(n) * add
		last = scale
	}
	if p.Rounds == 0 { // one setting: nothing to search
		return p, nil
	}
	if resume {
		units -= last
	}
	p.First = (budget - run) / units
	if least := int64(MinTrialBatches * batch); p.First < least {
		return Plan{}, fmt.Errorf("autotune: a budget of %d samples, of which the winner's run takes %d, leaves %d per first-round trial of %d, fewer than %d (%d batches): give autotune.budget at least %d samples (%.2fx)",
			budget, run, max(p.First, 0), trials, least, MinTrialBatches, run+units*least, float64(run+units*least)/float64(run))
	}
	return p, nil
}

// Samples returns the samples a trial of round k has trained at its end
// (with Resume, those of its rounds before included).
func (p Plan) Samples(k int) int64 {
	s := p.First
	for range k {
		s *= Eta
	}
	return min(s, p.Run)
}

// Keep returns how many trials round k runs.
func (p Plan) Keep(k int) int {
	n := p.Trials
	for range k {
		n = (n + Eta - 1) / Eta
	}
	return n
}

// Trial is one run of a setting in a round.
type Trial struct {
	// Setting indexes the search's settings; Round is the round, Samples
	// what the trial may train.
	Setting, Round int
	Samples        int64
}

// Outcome is what a trial gave: its best validation figure (NaN when it
// gave none) and the samples it trained.
type Outcome struct {
	Figure  float64
	Trained int64
}

// Search is the state of a successive halving over a plan's settings: an
// I/O-free core (Next, Report) that the runner feeds. Used by one
// goroutine.
type Search struct {
	plan   Plan
	higher bool
	round  int
	queue  []int             // the settings of the round not yet run, in order
	scores map[int]float64   // the figures of the round's trials so far, by setting
	trials []Trial           // every trial run
	out    map[Trial]Outcome // their outcomes
	done   bool
}

// NewSearch starts a search of plan over settings 0..plan.Trials-1; a
// higher figure is better when higher is true.
func NewSearch(plan Plan, higher bool) *Search {
	s := &Search{plan: plan, higher: higher, scores: map[int]float64{}, out: map[Trial]Outcome{}}
	for i := range plan.Trials {
		s.queue = append(s.queue, i)
	}
	if plan.Rounds == 0 {
		s.done, s.queue = true, s.queue[:1]
	}
	return s
}

// ErrNoFigure is the search's end when no trial of a round gave a
// validation figure.
var ErrNoFigure = errors.New("autotune: no trial of the round gave a validation figure")

// Next returns the next trial to run, or false when the search is done.
func (s *Search) Next() (Trial, bool) {
	if s.done || len(s.queue) == 0 {
		return Trial{}, false
	}
	return Trial{Setting: s.queue[0], Round: s.round, Samples: s.plan.Samples(s.round)}, true
}

// Report records the outcome of the trial Next returned, and moves to
// the next round once every trial of this one reported: the best
// Keep(round+1) settings go on (ties to the earlier setting), unless one
// is left, which ends the search.
func (s *Search) Report(t Trial, o Outcome) error {
	next, ok := s.Next()
	if !ok || t != next {
		return fmt.Errorf("autotune: a report for %+v, the search waits for %+v", t, next)
	}
	s.queue = s.queue[1:]
	s.trials = append(s.trials, t)
	s.out[t] = o
	if !math.IsNaN(o.Figure) {
		s.scores[t.Setting] = o.Figure
	}
	if len(s.queue) > 0 {
		return nil
	}
	ranked := s.ranked()
	if len(ranked) == 0 {
		s.done = true
		return ErrNoFigure
	}
	keep := s.plan.Keep(s.round + 1)
	if s.round+1 >= s.plan.Rounds || len(ranked) == 1 {
		s.done, s.queue = true, ranked[:1]
		return nil
	}
	s.round++
	s.queue = ranked[:min(keep, len(ranked))]
	clear(s.scores)
	return nil
}

// ranked returns the settings of the round that gave a figure, best
// first.
func (s *Search) ranked() []int {
	var r []int
	for i := range s.scores {
		r = append(r, i)
	}
	slices.SortFunc(r, func(a, b int) int {
		fa, fb := s.scores[a], s.scores[b]
		switch {
		case fa == fb:
			return a - b
		case fa > fb == s.higher:
			return -1
		}
		return 1
	})
	return r
}

// Winner returns the setting that won, once Next says the search is
// done (false before, or when no trial gave a figure).
func (s *Search) Winner() (int, bool) {
	if !s.done || len(s.queue) != 1 {
		return 0, false
	}
	return s.queue[0], true
}

// Trials returns the trials run so far, in order, with their outcomes.
func (s *Search) Trials() ([]Trial, []Outcome) {
	out := make([]Outcome, len(s.trials))
	for i, t := range s.trials {
		out[i] = s.out[t]
	}
	return slices.Clone(s.trials), out
}

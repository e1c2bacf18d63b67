package amspb

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/xdlgo/xps/ams"
	"github.com/xdlgo/xps/filters"
)

// FromOptimizerSpec converts a Go optimizer spec to its wire form.
func FromOptimizerSpec(s ams.OptimizerSpec) *OptimizerSpec {
	return &OptimizerSpec{Name: s.Name, Lr: s.LR, Beta1: s.Beta1, Beta2: s.Beta2, Eps: s.Eps,
		InitialAccumulator: s.InitialAccumulator, L1: s.L1, L2: s.L2, Beta: s.Beta, Momentum: s.Momentum}
}

// ToOptimizerSpec converts a wire optimizer spec to its Go form.
func ToOptimizerSpec(p *OptimizerSpec) ams.OptimizerSpec {
	if p == nil {
		return ams.OptimizerSpec{}
	}
	return ams.OptimizerSpec{Name: p.Name, LR: p.Lr, Beta1: p.Beta1, Beta2: p.Beta2, Eps: p.Eps,
		InitialAccumulator: p.InitialAccumulator, L1: p.L1, L2: p.L2, Beta: p.Beta, Momentum: p.Momentum}
}

// FromTableSpec converts a Go table spec to its wire form.
func FromTableSpec(s ams.TableSpec) *TableSpec {
	a := s.Admission
	return &TableSpec{Name: s.Name, Dim: uint32(s.Dim), Optimizer: FromOptimizerSpec(s.Optimizer),
		Init: &InitSpec{Kind: s.Init.Kind, Value: s.Init.Value, Scale: s.Init.Scale, Seed: s.Init.Seed},
		Admission: &AdmissionSpec{Kind: a.Kind, P: a.P, N: uint32(a.N), FalsePositiveRate: a.FalsePositiveRate,
			MaxPartitionBytes: uint64(a.MaxPartitionBytes), Generations: uint32(a.Generations)},
		Expiry:     fromExpirySpec(s.Expiry),
		BudgetRows: s.Budget.Rows, BudgetBytes: s.Budget.Bytes, Storage: s.Storage, TierDir: s.TierDir,
		Nonfinite: s.NonFinite, NonfiniteBound: s.NonFiniteBound}
}

func fromExpirySpec(e filters.ExpirySpec) *ExpirySpec {
	return &ExpirySpec{TtlSamples: e.TTLSamples, Ttl: e.TTL, MinHits: uint32(max(e.MinHits, 0)), MinHitsTtlSamples: e.MinHitsTTLSamples,
		MinHitsTtl: e.MinHitsTTL, Expr: e.Expr, MaxExpireFraction: e.MaxExpireFraction}
}

// ToTableSpec converts a wire table spec to its Go form.
func ToTableSpec(p *TableSpec) ams.TableSpec {
	s := ams.TableSpec{Name: p.GetName(), Dim: int(p.GetDim()), Optimizer: ToOptimizerSpec(p.GetOptimizer()),
		Budget: ams.Budget{Rows: p.GetBudgetRows(), Bytes: p.GetBudgetBytes()}, Storage: p.GetStorage(), TierDir: p.GetTierDir(),
		NonFinite: p.GetNonfinite(), NonFiniteBound: p.GetNonfiniteBound()}
	if in := p.GetInit(); in != nil {
		s.Init = ams.InitSpec{Kind: in.Kind, Value: in.Value, Scale: in.Scale, Seed: in.Seed}
	}
	if e := p.GetExpiry(); e != nil {
		s.Expiry = filters.ExpirySpec{TTLSamples: e.TtlSamples, TTL: e.Ttl, MinHits: int(min(e.MinHits, math.MaxInt32)),
			MinHitsTTLSamples: e.MinHitsTtlSamples, MinHitsTTL: e.MinHitsTtl, Expr: e.Expr, MaxExpireFraction: e.MaxExpireFraction}
	}
	if a := p.GetAdmission(); a != nil {
		s.Admission = filters.Spec{Kind: a.Kind, P: a.P, N: int(min(a.N, math.MaxInt32)), FalsePositiveRate: a.FalsePositiveRate,
			MaxPartitionBytes: int(min(a.MaxPartitionBytes, math.MaxInt32)), Generations: int(min(a.Generations, math.MaxInt32))}
	}
	return s
}

// FromOrigin converts a push's origin; the zero Origin is nil (unset).
func FromOrigin(o ams.Origin) *Origin {
	if o.IsZero() {
		return nil
	}
	return &Origin{Worker: o.Worker, Batch: o.Batch, Samples: o.Samples, Digest: o.Digest}
}

// ToOrigin converts a push's origin; nil is the zero Origin.
func ToOrigin(p *Origin) ams.Origin {
	if p == nil {
		return ams.Origin{}
	}
	return ams.Origin{Worker: p.Worker, Batch: p.Batch, Samples: p.Samples, Digest: p.Digest}
}

// FromApplied converts a worker's record of applied pushes.
func FromApplied(worker string, a *ams.Applied) *Applied {
	b := make([]byte, 0, 16*len(a.Ranges))
	for _, r := range a.Ranges {
		b = binary.LittleEndian.AppendUint64(b, r.Lo)
		b = binary.LittleEndian.AppendUint64(b, r.Hi)
	}
	return &Applied{Worker: worker, Ranges: b, Samples: a.Samples, Digest: a.Digest, Refused: a.Refused}
}

// ToApplied converts a worker's record of applied pushes; ranges that do
// not decode, or break ams.Applied's invariants, are an error.
func ToApplied(p *Applied) (*ams.Applied, error) {
	if len(p.Ranges)%16 != 0 {
		return nil, fmt.Errorf("%w: applied ranges of %d bytes", ams.ErrBadRequest, len(p.Ranges))
	}
	a := &ams.Applied{Samples: p.Samples, Digest: p.Digest, Refused: p.Refused}
	for i := 0; i < len(p.Ranges); i += 16 {
		r := ams.BatchRange{Lo: binary.LittleEndian.Uint64(p.Ranges[i:]), Hi: binary.LittleEndian.Uint64(p.Ranges[i+8:])}
		if r.Lo >= r.Hi || (len(a.Ranges) > 0 && a.Ranges[len(a.Ranges)-1].Hi >= r.Lo) {
			return nil, fmt.Errorf("%w: applied ranges of %s out of order", ams.ErrBadRequest, p.Worker)
		}
		a.Ranges = append(a.Ranges, r)
	}
	return a, nil
}

// FromTableUsage converts one shard's figures of a table.
func FromTableUsage(u ams.TableUsage) *TableStats {
	return &TableStats{Name: u.Name, Rows: uint64(u.Rows), MemoryBytes: uint64(u.MemoryBytes), RowBytes: uint64(u.RowBytes),
		FilterBytes: uint64(u.FilterBytes), Created: u.Created, FilteredPulls: u.FilteredPulls, FilteredPushes: u.FilteredPushes,
		Expired: u.Expired, Evicted: u.Evicted, NonfiniteRefused: u.NonFiniteRefused, NonfiniteClipped: u.NonFiniteClipped,
		Tier: fromTierUsage(u.Tier)}
}

func fromTierUsage(u ams.TierUsage) *TierUsage {
	if u == (ams.TierUsage{}) {
		return nil
	}
	return &TierUsage{ColdRows: u.ColdRows, ColdBytes: u.ColdBytes, Lookups: u.Lookups, Misses: u.Misses,
		DiskReads: u.DiskReads, DiskBatches: u.DiskBatches, Promoted: u.Promoted, Demoted: u.Demoted}
}

func toTierUsage(p *TierUsage) ams.TierUsage {
	return ams.TierUsage{ColdRows: p.GetColdRows(), ColdBytes: p.GetColdBytes(), Lookups: p.GetLookups(), Misses: p.GetMisses(),
		DiskReads: p.GetDiskReads(), DiskBatches: p.GetDiskBatches(), Promoted: p.GetPromoted(), Demoted: p.GetDemoted()}
}

// ToTableUsage converts one shard's figures of a table.
func ToTableUsage(p *TableStats) ams.TableUsage {
	return ams.TableUsage{Name: p.GetName(), Rows: int64(p.GetRows()), MemoryBytes: int64(p.GetMemoryBytes()), RowBytes: int64(p.GetRowBytes()),
		FilterBytes: int64(p.GetFilterBytes()), Counters: ams.Counters{Created: p.GetCreated(), FilteredPulls: p.GetFilteredPulls(),
			FilteredPushes: p.GetFilteredPushes(), Expired: p.GetExpired(), Evicted: p.GetEvicted(),
			NonFiniteRefused: p.GetNonfiniteRefused(), NonFiniteClipped: p.GetNonfiniteClipped()}, Tier: toTierUsage(p.GetTier())}
}

// FromDenseUsage converts one shard's figures of a dense range.
func FromDenseUsage(u ams.DenseUsage) *DenseStats {
	return &DenseStats{Name: u.Name, NonfiniteRefused: u.NonFiniteRefused}
}

// ToDenseUsage converts one shard's figures of a dense range.
func ToDenseUsage(p *DenseStats) ams.DenseUsage {
	return ams.DenseUsage{Name: p.GetName(), NonFiniteRefused: p.GetNonfiniteRefused()}
}

// FromLRSchedule converts a Go learning-rate schedule to its wire form
// (nil for one that scales nothing).
func FromLRSchedule(s ams.LRSchedule) *LRSchedule {
	if s == (ams.LRSchedule{}) || s == (ams.LRSchedule{Decay: ams.DecayNone}) {
		return nil
	}
	return &LRSchedule{WarmupSteps: s.WarmupSteps, Decay: s.Decay, DecaySteps: s.DecaySteps, MinScale: s.MinScale}
}

// ToLRSchedule converts a wire learning-rate schedule to its Go form.
func ToLRSchedule(p *LRSchedule) ams.LRSchedule {
	if p == nil {
		return ams.LRSchedule{}
	}
	return ams.LRSchedule{WarmupSteps: p.WarmupSteps, Decay: p.Decay, DecaySteps: p.DecaySteps, MinScale: p.MinScale}
}

package amspb

import "github.com/xdlgo/xps/ams"

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
	return &TableSpec{Name: s.Name, Dim: uint32(s.Dim), Optimizer: FromOptimizerSpec(s.Optimizer),
		Init: &InitSpec{Kind: s.Init.Kind, Value: s.Init.Value, Scale: s.Init.Scale, Seed: s.Init.Seed}}
}

// ToTableSpec converts a wire table spec to its Go form.
func ToTableSpec(p *TableSpec) ams.TableSpec {
	s := ams.TableSpec{Name: p.GetName(), Dim: int(p.GetDim()), Optimizer: ToOptimizerSpec(p.GetOptimizer())}
	if in := p.GetInit(); in != nil {
		s.Init = ams.InitSpec{Kind: in.Kind, Value: in.Value, Scale: in.Scale, Seed: in.Seed}
	}
	return s
}

package slide

import (
	"math"
	"testing"
)

func TestExp32(t *testing.T) {
	var worst float64
	for i := 0; i <= 200000; i++ {
		x := -87.0 * float64(i) / 200000
		got := float64(exp32(float32(x)))
		want := math.Exp(float64(float32(x)))
		worst = math.Max(worst, math.Abs(got-want)/want)
	}
	if worst > 5e-7 {
		t.Fatalf("worst relative error %g", worst)
	}
	if exp32(-100) != 0 || exp32(0) != 1 || !math.IsNaN(float64(exp32(float32(math.NaN())))) {
		t.Fatalf("edge cases: %v %v", exp32(-100), exp32(0))
	}
	if got := exp32(1); math.Abs(float64(got)-math.E) > 1e-6 {
		t.Fatalf("exp32(1) = %v", got)
	}
}

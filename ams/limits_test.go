package ams

import (
	"errors"
	"testing"
)

// TestCheckRequestSize: each limit holds at its value and refuses one
// more, as ErrTooLarge and thereby ErrBadRequest.
func TestCheckRequestSize(t *testing.T) {
	for _, tc := range []struct {
		ids, values, dense int
		ok                 bool
	}{
		{0, 0, 0, true},
		{MaxRequestIDs, MaxRequestValues, MaxDenseValues, true},
		{MaxRequestIDs + 1, MaxRequestIDs + 1, 0, false},
		{1, MaxRequestValues + 1, 0, false},
		{1, 1, MaxDenseValues + 1, false},
	} {
		err := CheckRequestSize(tc.ids, tc.values, tc.dense)
		if tc.ok != (err == nil) || (err != nil && (!errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrBadRequest))) {
			t.Errorf("CheckRequestSize(%d, %d, %d) = %v, want ok %v (else ErrTooLarge and ErrBadRequest)", tc.ids, tc.values, tc.dense, err, tc.ok)
		}
	}
}

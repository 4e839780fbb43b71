package testenv

import (
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	if s := Scale(); s < 1 {
		t.Errorf("Scale() = %v, want at least 1", s)
	}
	if d := Timeout(10 * time.Second); d < 10*time.Second {
		t.Errorf("Timeout(10s) = %v, want at least 10s", d)
	}
	t.Logf("scale %v", Scale())
}

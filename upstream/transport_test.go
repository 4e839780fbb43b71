package upstream

import (
	"testing"

	"github.com/toolshelf/toolshelf/config"
)

// Every transport the configuration accepts can be dialed, and nothing
// is dialed that the configuration does not name.
func TestEveryTransportDials(t *testing.T) {
	for _, tr := range config.Transports {
		if dialers[tr.Name] == nil {
			t.Errorf("the configuration takes transport %q, which upstream cannot dial", tr.Name)
		}
	}
	if len(dialers) != len(config.Transports) {
		t.Errorf("%d dialers for %d transports", len(dialers), len(config.Transports))
	}
}

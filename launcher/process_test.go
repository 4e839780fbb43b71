package launcher

import (
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
)

// A missing command is named in the error; its arguments, which may hold
// expanded secrets, are not.
func TestStartMissingCommand(t *testing.T) {
	cfg := &Plan{ServerConfig: config.ServerConfig{Name: "b", Command: "toolshelf-missing-cmd", Args: []string{"--key=s3cr3t-value"}}}
	_, err := Start(cfg, nil)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "toolshelf-missing-cmd") {
		t.Errorf("start error = %v", err)
	}
}

package upstream

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The tool lists' cache is under the command's XDG_CACHE_HOME when it is
// absolute; a relative one is ignored, as the XDG rules say, and the
// user's cache folder is used.
func TestDefaultCacheDirFromTheCommandsEnvironment(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		t.Skip("os.UserCacheDir reads no XDG_CACHE_HOME here")
	}
	own := t.TempDir()
	getenv := func(v string) func(string) string {
		return func(k string) string {
			if k == "XDG_CACHE_HOME" {
				return v
			}
			return os.Getenv(k)
		}
	}
	if got, want := DefaultCacheDir(getenv(own)), filepath.Join(own, "toolshelf", "tools"); got != want {
		t.Errorf("absolute XDG_CACHE_HOME: %q, want %q", got, want)
	}
	user, err := os.UserCacheDir()
	if err != nil {
		t.Skip(err)
	}
	if got, want := DefaultCacheDir(getenv("relative/cache")), filepath.Join(user, "toolshelf", "tools"); got != want {
		t.Errorf("relative XDG_CACHE_HOME: %q, want %q (the user's)", got, want)
	}
}

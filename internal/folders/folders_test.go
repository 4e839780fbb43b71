package folders

import (
	"runtime"
	"slices"
	"testing"
)

func TestFoldersFromTheCommandsEnvironment(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		t.Skip("the XDG places; macOS and Windows place configuration and caches their own way")
	}
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tt := range []struct {
		name                 string
		vars                 map[string]string
		config, cache, state string
	}{
		{"XDG", map[string]string{"HOME": "/home/a", "XDG_CONFIG_HOME": "/x/config", "XDG_CACHE_HOME": "/x/cache", "XDG_STATE_HOME": "/x/state"},
			"/x/config/toolshelf", "/x/cache/toolshelf", "/x/state/toolshelf"},
		{"home", map[string]string{"HOME": "/home/a"},
			"/home/a/.config/toolshelf", "/home/a/.cache/toolshelf", "/home/a/.local/state/toolshelf"},
		// The specification: a relative value is to be ignored. Taken as
		// it is, it would be a folder under whatever the working folder
		// is, which a wall that resolved it otherwise would not guard.
		{"relative XDG ignored", map[string]string{"HOME": "/home/a", "XDG_CONFIG_HOME": "x", "XDG_CACHE_HOME": "./c", "XDG_STATE_HOME": "s/t"},
			"/home/a/.config/toolshelf", "/home/a/.cache/toolshelf", "/home/a/.local/state/toolshelf"},
		{"no home", map[string]string{}, "", "", ""},
		{"relative home", map[string]string{"HOME": "home"}, "", "", ""},
		{"no home, XDG", map[string]string{"XDG_STATE_HOME": "/s"}, "", "", "/s/toolshelf"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			getenv := env(tt.vars)
			if got := Config(getenv); got != tt.config {
				t.Errorf("Config = %q, want %q", got, tt.config)
			}
			if got := Cache(getenv); got != tt.cache {
				t.Errorf("Cache = %q, want %q", got, tt.cache)
			}
			if got := State(getenv); got != tt.state {
				t.Errorf("State = %q, want %q", got, tt.state)
			}
			var want []string
			for _, d := range []string{tt.config, tt.cache, tt.state} {
				if d != "" {
					want = append(want, d)
				}
			}
			if got := Own(getenv); !slices.Equal(got, want) {
				t.Errorf("Own = %q, want %q", got, want)
			}
			want = want[:0]
			for _, d := range []string{tt.state, tt.cache} {
				if d != "" {
					want = append(want, d)
				}
			}
			if got := Kept(getenv); !slices.Equal(got, want) {
				t.Errorf("Kept = %q, want %q", got, want)
			}
		})
	}
}
